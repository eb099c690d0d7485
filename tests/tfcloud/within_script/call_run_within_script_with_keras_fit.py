# The shape of TensorFlow Cloud's example `call_run_within_script_with_keras_fit.py`: a script
# that trains a little here, calls tfc.run() with no entry point halfway, and does more in the
# job (`if tfc.remote():`). Offline: a small synthetic data set and model in place of Stanford
# Dogs and ResNet50; `import tfc_jupyter as tfc` in place of `import tensorflow_cloud as tfc`.
import numpy as np
import tensorflow as tf

import tfc_jupyter as tfc

x = np.linspace(-1, 1, 128).astype("float32")[:, None]
y = 2 * x - 1
ds_train = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
ds_test = ds_train.take(2)

model = tf.keras.Sequential([tf.keras.Input((1,)), tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")

if tfc.remote():
    epochs = 2
    train_data = ds_train
    test_data = ds_test
else:
    epochs = 1
    train_data = ds_train.take(1)
    test_data = ds_test.take(1)
print("remote epochs:" if tfc.remote() else "local epochs:", epochs)

model.fit(train_data, epochs=epochs, validation_data=test_data, verbose=2)

tfc.run(
    chief_config=tfc.COMMON_MACHINE_CONFIGS["CPU"],
    docker_config=tfc.DockerConfig(image_build_bucket="my-bucket"),
)

if tfc.remote():
    model.evaluate(test_data, verbose=2)
    print("after run: evaluated")
