# Ragged and sparse tensors (TF "Ragged tensors" and "Sparse tensors" guides).
# %%
import tensorflow as tf

rt = tf.ragged.constant([[3, 1, 4, 1], [], [5, 9, 2], [6], []])
print("row lengths:", rt.row_lengths().numpy().tolist())
print("sums:", tf.reduce_sum(rt, axis=1).numpy().tolist())
print("mapped:", tf.ragged.map_flat_values(tf.math.square, rt).to_list())
# %%
st = tf.sparse.SparseTensor(indices=[[0, 3], [2, 4]], values=[10, 20], dense_shape=[3, 10])
print("dense sum:", int(tf.sparse.reduce_sum(st)))
print("as dense row 2:", tf.sparse.to_dense(st)[2].numpy().tolist())
