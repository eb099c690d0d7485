# The GPU guide's first cell, then Keras: memory growth must be set before devices start.
# %%
import tensorflow as tf

gpus = tf.config.list_physical_devices("GPU")
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)
tf.config.set_visible_devices(gpus, "GPU")
print("GPUs:", len(gpus))
# %%
import numpy as np

tf.keras.utils.set_random_seed(2)
model = tf.keras.Sequential([tf.keras.Input(shape=(2,)), tf.keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
h = model.fit(np.ones((8, 2), "float32"), np.ones((8, 1), "float32"), epochs=2, verbose=0)
print("loss:", round(h.history["loss"][-1], 4))
