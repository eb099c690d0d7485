# Virtual devices before first use (TF DTensor and tf.data guides).
# %%
import tensorflow as tf

cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(
    cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2
)
logical = tf.config.list_logical_devices("CPU")
print("logical CPUs:", len(logical))
# %%
strategy = tf.distribute.MirroredStrategy([d.name for d in logical])
print("replicas:", strategy.num_replicas_in_sync)
with strategy.scope():
    v = tf.Variable(1.0)
print("v:", float(v.numpy()))
