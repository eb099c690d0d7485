# A MirroredStrategy notebook run with workers: the job must not wrap it in a second strategy.
# %%
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()
with strategy.scope():
    v = tf.Variable([1.0, 2.0, 3.0])


@tf.function
def double():
    return strategy.run(lambda: v * 2.0)


print("doubled:", strategy.experimental_local_results(double())[0].numpy().tolist())
