# tf.Module and gradients (TF "Introduction to modules, layers, and models" guide).
# %%
import tensorflow as tf


class Dense(tf.Module):
    def __init__(self, in_features, out_features, name=None):
        super().__init__(name=name)
        self.w = tf.Variable(tf.ones([in_features, out_features]), name="w")
        self.b = tf.Variable(tf.zeros([out_features]), name="b")

    def __call__(self, x):
        return tf.nn.relu(x @ self.w + self.b)


class Model(tf.Module):
    def __init__(self):
        super().__init__()
        self.a = Dense(3, 2)
        self.b = Dense(2, 1)

    def __call__(self, x):
        return self.b(self.a(x))


m = Model()
print("variables:", len(m.trainable_variables), "submodules:", len(m.submodules))
x = tf.constant([[1.0, 2.0, 3.0]])
with tf.GradientTape() as tape:
    y = m(x)
grads = tape.gradient(y, m.trainable_variables)
print("y:", y.numpy().tolist(), "grad norms:", [round(float(tf.norm(g)), 3) for g in grads])
