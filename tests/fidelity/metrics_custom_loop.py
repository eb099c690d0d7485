# Custom training with tf.distribute.Strategy, as TensorFlow's guide writes it: its own
# MirroredStrategy, Keras metrics updated in the distributed step and reset after each epoch.
# %%
import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)
strategy = tf.distribute.MirroredStrategy()
GLOBAL_BATCH = 32
rng = np.random.RandomState(0)
x = rng.rand(256, 8).astype("float32")
labels = (x[:, 0] + x[:, 1] > 1.0).astype("int64")
train = strategy.experimental_distribute_dataset(
    tf.data.Dataset.from_tensor_slices((x[:192], labels[:192])).batch(GLOBAL_BATCH)
)
test = strategy.experimental_distribute_dataset(
    tf.data.Dataset.from_tensor_slices((x[192:], labels[192:])).batch(GLOBAL_BATCH)
)
# %%
with strategy.scope():
    model = tf.keras.Sequential(
        [tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(2)]
    )
    optimizer = tf.keras.optimizers.Adam(0.01)
    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    test_loss = tf.keras.metrics.Mean(name="test_loss")
    train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")
    test_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="test_accuracy")


def compute_loss(y, logits):
    return tf.nn.compute_average_loss(loss_object(y, logits), global_batch_size=GLOBAL_BATCH)


def train_step(inputs):
    xb, yb = inputs
    with tf.GradientTape() as tape:
        logits = model(xb, training=True)
        loss = compute_loss(yb, logits)
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    train_accuracy.update_state(yb, logits)
    return loss


def test_step(inputs):
    xb, yb = inputs
    logits = model(xb, training=False)
    test_loss.update_state(loss_object(yb, logits))
    test_accuracy.update_state(yb, logits)


@tf.function
def distributed_train_step(inputs):
    losses = strategy.run(train_step, args=(inputs,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)


@tf.function
def distributed_test_step(inputs):
    return strategy.run(test_step, args=(inputs,))


# %%
for epoch in range(3):
    total_loss, batches = 0.0, 0
    for batch in train:
        total_loss += distributed_train_step(batch)
        batches += 1
    for batch in test:
        distributed_test_step(batch)
    print(
        f"Epoch {epoch + 1}, Train accuracy: {float(train_accuracy.result())!r}, "
        f"Test loss: {float(test_loss.result())!r}, "
        f"Test accuracy: {float(test_accuracy.result())!r}"
    )
    test_loss.reset_state()
    train_accuracy.reset_state()
    test_accuracy.reset_state()
