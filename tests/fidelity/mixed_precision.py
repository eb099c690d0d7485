# Mixed precision (TF "Mixed precision" guide): a global policy set in the notebook.
# %%
import tensorflow as tf

tf.keras.mixed_precision.set_global_policy("mixed_float16")
layer = tf.keras.layers.Dense(2)
out = layer(tf.ones((1, 3)))
print("policy:", tf.keras.mixed_precision.global_policy().name)
print("compute:", out.dtype.name, "variables:", layer.dtype_policy.variable_dtype)
tf.keras.mixed_precision.set_global_policy("float32")
