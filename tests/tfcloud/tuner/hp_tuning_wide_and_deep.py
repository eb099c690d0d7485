# TensorFlow Cloud's tutorial "HP Tuning of a Wide and Deep model using Google Cloud"
# (g3doc/tutorials/hp_tuning_wide_and_deep_model.ipynb) as a script: `import tensorflow_cloud
# as tfc` became `import tfc_jupyter as tfc`; the data is small and synthetic (the tutorial
# reads a Kaggle CSV from its bucket and splits it with scikit-learn); Keras 3 renamed what the
# tutorial's Keras 2 code used (marked "Keras 3"); the trials and epochs are few.
import os
import sys

import numpy as np
import pandas as pd
import tensorflow as tf
from tensorflow.keras import layers

import tfc_jupyter as tfc

GCP_PROJECT_ID = "my-project"
SERVICE_ACCOUNT = f"trainer@{GCP_PROJECT_ID}.iam.gserviceaccount.com"
REGION = "us-central1"
JOB_NAME = "wide_and_deep"
NUM_JOBS = int(os.environ.get("NUM_JOBS", "2"))
STUDY_NUMBER = "00001"
STUDY_ID = f"{GCP_PROJECT_ID}_{JOB_NAME}_{STUDY_NUMBER}"
GCS_BASE_PATH = os.path.abspath("tuner_out")  # gs://BUCKET/JOB/STUDY in the tutorial
TENSORBOARD_LOGS_DIR = os.path.join(GCS_BASE_PATH, "logs")

# pd.read_csv(f"{GCS_BASE_PATH}/caiis-dogfood-day-2020/train.csv") in the tutorial:
# categorical and numeric columns and a binary target (and an id column, left out here: Keras 3
# no longer drops a dataset's keys that the model has no input for).
rng = np.random.default_rng(0)
n = 200
data = pd.DataFrame(
    {
        "bin_0": rng.integers(0, 2, n).astype("float32"),
        "ord_0": rng.integers(1, 4, n).astype("float32"),
        "nom_0": pd.Series(rng.choice(["Red", "Blue", "Green"], n), dtype=object),  # text as
        "nom_1": pd.Series(rng.choice(["Circle", "Square"], n), dtype=object),  # pandas 1-2 read it
        "day": rng.integers(1, 8, n).astype("float32"),
    }
)
data["target"] = ((data["bin_0"] + (data["nom_0"] == "Red")) > 1).astype("int64")
train, test = data.iloc[:180], data.iloc[180:]  # train_test_split(data, test_size=0.1)


def df_to_dataset(df, shuffle=True, batch_size=32):
    df = df.copy()
    labels = df.pop("target")
    ds = tf.data.Dataset.from_tensor_slices((dict(df), labels))
    if shuffle:
        ds = ds.shuffle(buffer_size=len(df))
    ds = ds.batch(batch_size)
    return ds


sm_batch_size = 64  # 1000 in the tutorial
train_ds = df_to_dataset(train, batch_size=sm_batch_size)
test_ds = df_to_dataset(test, shuffle=False, batch_size=sm_batch_size)

preprocessing = layers  # Keras 3: tensorflow.keras.layers.experimental.preprocessing


def create_model_inputs():
    inputs = {}
    for name, column in data.items():
        if name in ("id", "target"):
            continue
        dtype = column.dtype
        if dtype == object:
            dtype = tf.string
        else:
            dtype = tf.float32
        inputs[name] = tf.keras.Input(shape=(1,), name=name, dtype=dtype)
    return inputs


def preprocess_numeric_inputs(inputs):
    numeric_inputs = {name: input for name, input in inputs.items() if input.dtype == tf.float32}
    x = layers.Concatenate()(list(numeric_inputs.values()))
    norm = preprocessing.Normalization()
    norm.adapt(np.array(data[list(numeric_inputs.keys())]))
    numeric_inputs = norm(x)
    return numeric_inputs


def preprocess_categorical_inputs(inputs):
    categorical_inputs = []
    for name, input in inputs.items():
        if input.dtype == tf.float32:
            continue
        lookup = preprocessing.StringLookup(vocabulary=np.unique(data[name]))
        # Keras 3: vocabulary_size() (vocab_size() in Keras 2)
        one_hot = preprocessing.CategoryEncoding(num_tokens=lookup.vocabulary_size())
        x = lookup(input)
        x = one_hot(x)
        categorical_inputs.append(x)
    return layers.concatenate(categorical_inputs)


import kerastuner  # noqa: E402

HPS = kerastuner.engine.hyperparameters.HyperParameters()
HPS.Float("learning_rate", min_value=1e-4, max_value=1e-2, sampling="log")
HPS.Int("num_layers", min_value=2, max_value=3)  # max 5 in the tutorial
for i in range(3):
    HPS.Float("dropout_rate_" + str(i), min_value=0.0, max_value=0.3, step=0.1)
    HPS.Choice("num_units_" + str(i), [8, 16])  # [32, 64, 128, 256] in the tutorial

from tensorflow.keras.optimizers import Adam  # noqa: E402


def create_wide_and_deep_model(hp):
    inputs = create_model_inputs()
    wide = preprocess_categorical_inputs(inputs)
    wide = layers.BatchNormalization()(wide)

    deep = preprocess_numeric_inputs(inputs)
    for i in range(hp.get("num_layers")):
        deep = layers.Dense(hp.get("num_units_" + str(i)))(deep)
        deep = layers.BatchNormalization()(deep)
        deep = layers.ReLU()(deep)
        deep = layers.Dropout(hp.get("dropout_rate_" + str(i)))(deep)

    both = layers.concatenate([wide, deep])
    outputs = layers.Dense(1, activation="sigmoid")(both)
    model = tf.keras.Model(inputs=inputs, outputs=outputs)
    metrics = [
        tf.keras.metrics.Precision(name="precision"),
        tf.keras.metrics.Recall(name="recall"),
        "accuracy",
        "mse",
    ]
    model.compile(
        optimizer=Adam(learning_rate=hp.get("learning_rate")),  # Keras 3: lr= is gone
        loss="binary_crossentropy",
        metrics=metrics,
    )
    return model


from tfc_jupyter import CloudTuner  # noqa: E402

distribution_strategy = None
if not tfc.remote():
    distribution_strategy = tf.distribute.MirroredStrategy()

tuner = CloudTuner(
    create_wide_and_deep_model,
    project_id=GCP_PROJECT_ID,
    project_name=JOB_NAME,
    region=REGION,
    objective="accuracy",
    hyperparameters=HPS,
    max_trials=3,  # 100 in the tutorial
    directory=GCS_BASE_PATH,
    study_id=STUDY_ID,
    overwrite=False,  # True in the tutorial, where each job had its own folder
    distribution_strategy=distribution_strategy,
)

callbacks = [tf.keras.callbacks.TensorBoard(log_dir=TENSORBOARD_LOGS_DIR)]
if tfc.remote():
    tuner.search(train_ds, epochs=2, validation_data=test_ds, callbacks=callbacks)  # 20
    best = tuner.get_best_hyperparameters(1)[0]
    print("BEST", sorted(best.values.items()))

TF_GPU_IMAGE = "gcr.io/deeplearning-platform-release/tf2-cpu.2-5"

tfc.run_cloudtuner(
    distribution_strategy="auto",
    docker_config=tfc.DockerConfig(parent_image=TF_GPU_IMAGE, image_build_bucket="my-bucket"),
    chief_config=tfc.COMMON_MACHINE_CONFIGS["CPU"],  # MachineConfig(cpu_cores=16, memory=60):
    # TensorFlow Cloud's MachineConfig comes with a T4 unless told otherwise
    job_labels={"job": JOB_NAME},
    service_account=SERVICE_ACCOUNT,
    num_jobs=NUM_JOBS,
    stream_logs=True,
)
print("the tuning job was launched", file=sys.stderr)
