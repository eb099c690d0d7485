# The "custom training walkthrough": eager gradients and apply_gradients, no tf.function.
# %%
import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(4)
features = np.random.default_rng(4).normal(size=(60, 4)).astype("float32")
labels = (features[:, 0] + features[:, 1] > 0).astype("int32")
model = tf.keras.Sequential(
    [tf.keras.Input(shape=(4,)), tf.keras.layers.Dense(10, activation="relu"), tf.keras.layers.Dense(2)]
)
loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.SGD(learning_rate=0.1)
# %%
def grad(model, inputs, targets):
    with tf.GradientTape() as tape:
        loss_value = loss_object(y_true=targets, y_pred=model(inputs, training=True))
    return loss_value, tape.gradient(loss_value, model.trainable_variables)


for epoch in range(3):
    loss_value, grads = grad(model, features, labels)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    print(f"Epoch {epoch:03d}: Loss: {float(loss_value):.3f}")
