# tf.function and AutoGraph (TF "Better performance with tf.function" guide).
# %%
import tensorflow as tf


@tf.function
def collatz(n):
    steps = tf.constant(0)
    while n > 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


print("collatz(27):", int(collatz(tf.constant(27))))
# %%
@tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
def cumulative(x):
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    total = tf.constant(0.0)
    for i in tf.range(tf.shape(x)[0]):
        total += x[i]
        ta = ta.write(i, total)
    return ta.stack()


print("cumulative:", cumulative(tf.constant([1.0, 2.0, 3.0])).numpy().tolist())
print("traces:", cumulative.experimental_get_tracing_count())
