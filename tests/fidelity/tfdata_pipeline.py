# tf.data input pipelines (TF "tf.data: Build TensorFlow input pipelines" guide).
# %%
import tensorflow as tf

def not_multiple_of_3(x):
    return x % 3 != 0


def square(x):
    return x * x


ds = tf.data.Dataset.range(20)
ds = ds.filter(not_multiple_of_3).map(square, num_parallel_calls=tf.data.AUTOTUNE)
ds = ds.shuffle(8, seed=42).batch(4).prefetch(tf.data.AUTOTUNE)
for batch in ds.take(3):
    print("batch:", batch.numpy().tolist())
# %%
windows = tf.data.Dataset.range(7).window(3, shift=2, drop_remainder=True)
print("windows:", [list(w.as_numpy_iterator()) for w in windows])
print("cardinality:", int(ds.cardinality()))
