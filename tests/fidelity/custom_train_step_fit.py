# Overriding Model.train_step, driven by fit (TF "Customizing what happens in fit" guide).
# %%
import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(5)


class CustomModel(tf.keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = tf.reduce_mean(tf.square(y - y_pred))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


inputs = tf.keras.Input(shape=(3,))
model = CustomModel(inputs, tf.keras.layers.Dense(1)(inputs))
model.compile(optimizer="adam")
x = np.random.default_rng(5).random((64, 3)).astype("float32")
y = x.sum(axis=1, keepdims=True)
history = model.fit(x, y, epochs=3, batch_size=16, verbose=0)
print("epochs:", len(history.history["loss"]), "finite:", bool(np.isfinite(history.history["loss"]).all()))
