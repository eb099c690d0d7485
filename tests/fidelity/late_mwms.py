# TensorFlow is used before the strategy is built: fine in one process without TF_CONFIG.
# %%
import tensorflow as tf

print("sum:", int(tf.reduce_sum(tf.range(10))))
# %%
strategy = tf.distribute.MultiWorkerMirroredStrategy()
with strategy.scope():
    v = tf.Variable(3.0)
print("replicas:", strategy.num_replicas_in_sync, "v:", float(v.numpy()))
