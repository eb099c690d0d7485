# Complex numbers in a variable (TF "Variables" guide, signal processing notebooks).
# %%
import numpy as np
import tensorflow as tf

z = tf.Variable(np.array([1 + 2j, 3 - 1j]), dtype=tf.complex128)
z.assign(z * tf.constant(1j, dtype=tf.complex128))
print("z:", [complex(round(c.real, 3), round(c.imag, 3)) for c in z.numpy()])
print("abs:", tf.abs(z).numpy().round(3).tolist())
# %%
x = tf.signal.fft(tf.cast(tf.range(4, dtype=tf.float32), tf.complex64))
print("fft:", np.round(x.numpy(), 3).tolist())
