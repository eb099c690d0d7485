# Custom training step with a Keras 3 optimizer inside tf.function (TF "custom training" guide).
# %%
import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(256, 4)).astype("float32")
y = x @ np.array([[1.0], [-2.0], [0.5], [3.0]], dtype="float32")
# %%
model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.05)
loss_fn = tf.keras.losses.MeanSquaredError()


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = loss_fn(yb, model(xb, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
# %%
for epoch in range(3):
    loss = train_step(x, y)
    print(f"epoch {epoch}: loss {float(loss):.4f}")
