"""The Iris walkthrough's loop (TensorFlow's custom-training basics): new Keras metrics each
epoch, never reset, and the epoch's loss written with ``tf.summary.scalar``. Data is synthetic.
The last line is ``PRINTED [losses, accuracies]``: what the code kept."""

import json

import numpy as np
import tensorflow as tf

x = np.random.RandomState(0).rand(120, 4).astype("float32")
y = (x.sum(1) > 2).astype("int64")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
model = tf.keras.Sequential(
    [tf.keras.Input((4,)), tf.keras.layers.Dense(10, activation="relu"), tf.keras.layers.Dense(3)]
)
loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)
writer = tf.summary.create_file_writer("logs")
train_loss_results, train_accuracy_results = [], []
for epoch in range(3):
    epoch_loss_avg = tf.keras.metrics.Mean()
    epoch_accuracy = tf.keras.metrics.SparseCategoricalAccuracy()
    for xb, yb in ds:
        with tf.GradientTape() as tape:
            loss_value = loss_object(yb, model(xb, training=True))
        grads = tape.gradient(loss_value, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        epoch_loss_avg.update_state(loss_value)
        epoch_accuracy.update_state(yb, model(xb, training=True))
    train_loss_results.append(float(epoch_loss_avg.result()))
    train_accuracy_results.append(float(epoch_accuracy.result()))
    with writer.as_default():
        tf.summary.scalar("epoch_loss", epoch_loss_avg.result(), step=epoch)
    loss, accuracy = epoch_loss_avg.result(), epoch_accuracy.result()
    print(f"Epoch {epoch:03d}: Loss: {loss:.3f}, Accuracy: {accuracy:.3%}")
print("PRINTED", json.dumps([train_loss_results, train_accuracy_results]))
