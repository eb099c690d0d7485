# Export and reload a SavedModel (TF "Using the SavedModel format" guide).
# %%
import os
import tempfile

import tensorflow as tf


class Scale(tf.Module):
    def __init__(self):
        super().__init__()
        self.factor = tf.Variable(3.0)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def __call__(self, x):
        return x * self.factor


path = os.path.join(tempfile.mkdtemp(), "scale")
tf.saved_model.save(Scale(), path)
loaded = tf.saved_model.load(path)
print("served:", loaded(tf.constant([1.0, 2.0])).numpy().tolist())
print("signatures:", list(loaded.signatures.keys()))
