"""A custom training loop as TensorFlow's guides write one, run as a job by the results tests.

Keras metrics are updated inside a ``tf.function`` under a strategy, printed and reset by the
code once an epoch: at its end (``LOOP_RESET=end``) or at the start of the next (``start``).
``LOOP_STRATEGY``: ``default``, ``mirrored`` or ``multi_worker``. A ``fit`` follows (unless
``LOOP_FIT=0``), whose own metric resets are Keras' business. The last line is
``PRINTED [json]``: what the code printed.
"""

import json
import os

import numpy as np
import tensorflow as tf

KIND, WHEN = os.environ["LOOP_STRATEGY"], os.environ["LOOP_RESET"]
strategy = {
    "default": tf.distribute.get_strategy,
    "mirrored": tf.distribute.MirroredStrategy,
    "multi_worker": tf.distribute.MultiWorkerMirroredStrategy,
}[KIND]()
x = np.random.RandomState(0).rand(64, 4).astype("float32")
y = x.sum(1, keepdims=True)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    optimizer = tf.keras.optimizers.SGD(0.1)
    train_loss = tf.keras.metrics.Mean(name="train_loss")
    train_mae = tf.keras.metrics.MeanAbsoluteError(name="train_mae")
data = strategy.experimental_distribute_dataset(
    tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
)


def reset(metric: tf.keras.metrics.Metric) -> None:
    """TensorFlow 2.15's Keras: ``reset_states``; Keras 3: ``reset_state``."""
    if hasattr(metric, "reset_states"):
        metric.reset_states()
    else:
        metric.reset_state()


@tf.function
def train_step(batch: tuple[tf.Tensor, tf.Tensor]) -> None:
    def step(a: tf.Tensor, b: tf.Tensor) -> None:
        with tf.GradientTape() as tape:
            p = model(a, training=True)
            loss = tf.reduce_mean(tf.square(p - b))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        train_loss.update_state(loss)
        train_mae.update_state(b, p)

    strategy.run(step, args=batch)


printed = []
for epoch in range(3):
    if WHEN == "start":
        reset(train_loss)
        reset(train_mae)
    for batch in data:
        train_step(batch)
    printed.append(
        {"train_loss": float(train_loss.result()), "train_mae": float(train_mae.result())}
    )
    print(f"Epoch {epoch + 1}, Loss: {train_loss.result():.4f}")
    if WHEN == "end":
        reset(train_loss)
        reset(train_mae)
if os.environ.get("LOOP_FIT", "1") == "1":
    with strategy.scope():
        model.compile("sgd", "mse")
    model.fit(x, y, epochs=1, verbose=0)
print("PRINTED", json.dumps(printed))
