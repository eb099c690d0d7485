# TensorFlow Cloud's tutorial "Hyperparameter tuning CIFAR10 using Google Cloud"
# (g3doc/tutorials/hp_tuning_cifar10_using_google_cloud.ipynb), as a script: the import is
# the change (import tfc_jupyter as tfc, from tfc_jupyter import CloudTuner); the data is small
# and synthetic, the search short, and the files local (no project, bucket or service account
# on this machine). Its tfc.run_cloudtuner(num_jobs=NUM_JOBS) call launches this script.
import os
import sys

import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

import tfc_jupyter as tfc

GCP_PROJECT_ID = "my-project"
REGION = "us-central1"
JOB_NAME = "cifar10"
NUM_JOBS = int(os.environ.get("NUM_JOBS", "2"))
STUDY_NUMBER = "00001"
STUDY_ID = f"{GCP_PROJECT_ID}_{JOB_NAME}_{STUDY_NUMBER}"
GCS_BASE_PATH = os.path.abspath("tuner_out")  # gs://BUCKET/... in the tutorial
TENSORBOARD_LOGS_DIR = os.path.join(GCS_BASE_PATH, "logs")

rng = np.random.default_rng(0)  # tf.keras.datasets.cifar10.load_data() in the tutorial
x_train = rng.random((64, 32, 32, 3), dtype=np.float32)
y_train = rng.integers(0, 10, size=(64,))
INPUT_IMG_SIZE = 32
NUM_CLASSES = 10

import kerastuner  # noqa: E402

HPS = kerastuner.engine.hyperparameters.HyperParameters()
HPS.Int("conv_blocks", 1, 2, default=1)
for i in range(2):
    HPS.Int("filters_" + str(i), 4, 8, step=4)
    HPS.Choice("pooling_" + str(i), ["avg", "max"])
HPS.Int("hidden_size", 8, 16, step=8, default=8)
HPS.Float("dropout", 0, 0.5, step=0.1, default=0.5)
HPS.Float("learning_rate", 1e-4, 1e-2, sampling="log")


def build_model(hp):
    inputs = tf.keras.Input(shape=(INPUT_IMG_SIZE, INPUT_IMG_SIZE, 3))
    x = inputs
    for i in range(hp.get("conv_blocks")):
        filters = hp.get("filters_" + str(i))
        x = layers.Conv2D(filters, kernel_size=(3, 3), padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.ReLU()(x)
        if hp.get("pooling_" + str(i)) == "max":
            x = layers.MaxPool2D(pool_size=2)(x)  # Keras 3 asks for pool_size
        else:
            x = layers.AvgPool2D(pool_size=2)(x)
    x = layers.GlobalAvgPool2D()(x)
    x = layers.Dense(hp.get("hidden_size"), activation="relu")(x)
    x = layers.Dropout(hp.get("dropout"))(x)
    outputs = layers.Dense(NUM_CLASSES, activation="softmax")(x)
    model = tf.keras.Model(inputs, outputs)
    model.compile(
        optimizer=tf.keras.optimizers.Adam(hp.get("learning_rate")),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


from tfc_jupyter import CloudTuner  # noqa: E402

distribution_strategy = None
if not tfc.remote():
    distribution_strategy = tf.distribute.MirroredStrategy()

tuner = CloudTuner(
    build_model,
    project_id=GCP_PROJECT_ID,
    project_name=JOB_NAME,
    region=REGION,
    objective="accuracy",
    hyperparameters=HPS,
    max_trials=4,
    directory=GCS_BASE_PATH,
    study_id=STUDY_ID,
    overwrite=False,  # True in the tutorial, where each job had its own folder
    distribution_strategy=distribution_strategy,
)

callbacks = [tf.keras.callbacks.TensorBoard(log_dir=TENSORBOARD_LOGS_DIR)]
if tfc.remote():
    tuner.search(x=x_train, y=y_train, epochs=1, validation_split=0.2, callbacks=callbacks)
    best = tuner.get_best_hyperparameters(1)[0]
    print("BEST", sorted(best.values.items()))

tfc.run_cloudtuner(
    distribution_strategy="auto",
    chief_config=tfc.COMMON_MACHINE_CONFIGS["CPU"],  # K80_4X in the tutorial
    job_labels={"job": JOB_NAME},
    num_jobs=NUM_JOBS,
    stream_logs=True,
)
print("the tuning job was launched", file=sys.stderr)
