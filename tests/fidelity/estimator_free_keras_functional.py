# The Keras functional API with a tf.data pipeline and evaluate (TF "Functional API" guide).
# %%
import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(6)
inputs = tf.keras.Input(shape=(4,), name="features")
hidden = tf.keras.layers.Dense(6, activation="tanh")(inputs)
outputs = tf.keras.layers.Dense(1, name="score")(hidden)
model = tf.keras.Model(inputs, outputs)
model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")
x = np.random.default_rng(6).normal(size=(64, 4)).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, x.mean(axis=1, keepdims=True))).batch(16)
model.fit(ds, epochs=2, verbose=0)
print("params:", model.count_params())
print("eval:", round(float(model.evaluate(ds, verbose=0)), 4))
