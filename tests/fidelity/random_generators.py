# tf.random.Generator and stateless ops (TF "Random number generation" guide).
# %%
import tensorflow as tf

g = tf.random.Generator.from_seed(1234)
print("normal:", g.normal([3]).numpy().round(4).tolist())
print("uniform:", g.uniform([2], maxval=10, dtype=tf.int32).numpy().tolist())
print("stateless:", tf.random.stateless_normal([2], seed=[1, 2]).numpy().round(4).tolist())
tf.random.set_seed(7)
print("split:", [float(tf.round(s.normal([]) * 1000)) for s in g.split(2)])
