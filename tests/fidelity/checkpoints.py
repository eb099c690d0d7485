# tf.train.Checkpoint and CheckpointManager (TF "Training checkpoints" guide).
# %%
import tempfile

import tensorflow as tf

step = tf.Variable(0)
w = tf.Variable([1.0, 2.0])
ckpt = tf.train.Checkpoint(step=step, w=w)
folder = tempfile.mkdtemp()
manager = tf.train.CheckpointManager(ckpt, folder, max_to_keep=2)
for _ in range(3):
    step.assign_add(1)
    w.assign(w * 2.0)
    manager.save()
print("kept:", len(manager.checkpoints))
# %%
w.assign([0.0, 0.0])
ckpt.restore(manager.latest_checkpoint)
print("restored step", int(step), "w", w.numpy().tolist())
