# Copyright 2020 Google LLC. All Rights Reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

import os

import tensorflow as tf
import tfc_jupyter as tfc

from create_model import create_keras_model

# Offline: a small synthetic MNIST in place of tfds.load(name="mnist", ...); the rest of the
# example is unchanged.
def _synthetic(n, seed):
    images = tf.random.stateless_uniform((n, 28, 28, 1), (seed, 0), maxval=256, dtype=tf.int32)
    labels = tf.cast(tf.reduce_mean(tf.cast(images, tf.float32), axis=[1, 2, 3]) > 127.5, tf.int64)
    return tf.data.Dataset.from_tensor_slices((tf.cast(images, tf.uint8), labels))


mnist_train, mnist_test = _synthetic(256, 1), _synthetic(64, 2)

# Setup input pipeline
num_train_examples = 256
num_test_examples = 64

BUFFER_SIZE = 10000
BATCH_SIZE = 64


def scale(image, label):
    image = tf.cast(image, tf.float32)
    image /= 255

    return image, label


train_dataset = mnist_train.map(scale).cache()
train_dataset = train_dataset.shuffle(BUFFER_SIZE).batch(BATCH_SIZE)
eval_dataset = mnist_test.map(scale).batch(BATCH_SIZE)

model = create_keras_model()

if tfc.remote():
    epochs = 10
else:
    epochs = 1

model.fit(train_dataset, epochs=epochs)
