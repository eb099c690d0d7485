# Keras fit with callbacks (TF "Writing your own callbacks" guide).
# %%
import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(3)
x = np.random.default_rng(3).normal(size=(128, 5)).astype("float32")
y = (x[:, :1] > 0).astype("float32")
# %%
class Printer(tf.keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        print(f"epoch {epoch}: loss {logs['loss']:.3f}")


model = tf.keras.Sequential(
    [tf.keras.Input(shape=(5,)), tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(1, activation="sigmoid")]
)
model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="binary_crossentropy", metrics=["accuracy"])
history = model.fit(
    x, y, epochs=4, batch_size=32, verbose=0,
    callbacks=[Printer(), tf.keras.callbacks.EarlyStopping(monitor="loss", patience=2)],
)
print("epochs run:", len(history.history["loss"]))
