# Its own MultiWorkerMirroredStrategy and a custom loop (TF "multi-worker custom loop" tutorial).
# %%
import json
import os

import numpy as np
import tensorflow as tf

strategy = tf.distribute.MultiWorkerMirroredStrategy()
tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
task = tf_config.get("task", {"type": "chief", "index": 0})
print("replicas in sync:", strategy.num_replicas_in_sync)
# %%
GLOBAL_BATCH = 16
with strategy.scope():
    w = tf.Variable(0.0)
    optimizer = tf.keras.optimizers.SGD(0.1)


def dataset_fn(ctx):
    x = np.arange(64, dtype="float32") / 64.0
    ds = tf.data.Dataset.from_tensor_slices((x, 2.0 * x)).repeat()
    return ds.batch(ctx.get_per_replica_batch_size(GLOBAL_BATCH))


dist = iter(strategy.distribute_datasets_from_function(dataset_fn))


@tf.function
def train_step(it):
    def step_fn(batch):
        xb, yb = batch
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(tf.square(w * xb - yb), global_batch_size=GLOBAL_BATCH)
        optimizer.apply_gradients([(tape.gradient(loss, w), w)])
        return loss

    return strategy.reduce("SUM", strategy.run(step_fn, args=(next(it),)), axis=None)


for step in range(20):
    loss = train_step(dist)
print(f"{task['type']}: w moved towards 2: {0.0 < float(w.numpy()) < 2.0}")
