# TensorFlow Cloud's example "ai_platform_vizier_tuner.ipynb" (src/python/tensorflow_cloud/
# tuner/tests/examples/) as a script: `from tensorflow_cloud import CloudTuner` became `from
# tfc_jupyter import CloudTuner`; the data is small and synthetic (MNIST's shapes; the example
# downloads MNIST, and reads it again with tensorflow_datasets); Keras 3's renames are marked;
# the trials and epochs are few. The tuner searches in this process, as in the notebook: one
# tuner, then four tuners in threads sharing one study.
import datetime
import time
from multiprocessing.dummy import Pool

import keras_tuner
import numpy as np
import tensorflow as tf

from tfc_jupyter import CloudTuner

REGION = "us-central1"
PROJECT_ID = "my-project"

# mnist.load_data() in the example (x[:10000]), scaled to [0, 1]
rng = np.random.default_rng(0)
x = rng.random((96, 28, 28), dtype=np.float32)
y = rng.integers(0, 10, size=(96,))
val_x = rng.random((32, 28, 28), dtype=np.float32)
val_y = rng.integers(0, 10, size=(32,))

from tensorflow.keras import Sequential  # noqa: E402
from tensorflow.keras.layers import Dense, Flatten  # noqa: E402
from tensorflow.keras.optimizers import Adam  # noqa: E402


def build_model(hp):
    model = Sequential()
    model.add(Flatten(input_shape=(28, 28)))

    # the number of layers is tunable
    for _ in range(hp.get("num_layers")):
        model.add(Dense(units=8, activation="relu"))  # 64 in the example
    model.add(Dense(10, activation="softmax"))

    # the learning rate is tunable
    model.compile(
        optimizer=Adam(learning_rate=hp.get("learning_rate")),  # Keras 3: lr= is gone
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


# Configure the search space
HPS = keras_tuner.HyperParameters()
HPS.Float("learning_rate", min_value=1e-4, max_value=1e-2, sampling="log")
HPS.Int("num_layers", 2, 10)

tuner = CloudTuner(
    build_model,
    project_id=PROJECT_ID,
    region=REGION,
    objective="accuracy",
    hyperparameters=HPS,
    max_trials=2,  # 5 in the example
    directory="tmp_dir/1",
)
tuner.search_space_summary()
tuner.search(x=x, y=y, epochs=1, validation_data=(val_x, val_y))  # 10 epochs
tuner.results_summary()
model = tuner.get_best_models(num_models=1)[0]
print(model)
print("ONE TUNER", len(tuner.oracle.trials))

STUDY_ID = "Tuner_study_{}".format(datetime.datetime.now().strftime("%Y%m%d_%H%M%S"))


def single_tuner(tuner_id):
    """Instantiate a `CloudTuner` and set up its `tuner_id`."""
    tuner = CloudTuner(
        build_model,
        project_id=PROJECT_ID,
        region=REGION,
        objective="accuracy",
        hyperparameters=HPS,
        max_trials=6,  # 18 in the example
        study_id=STUDY_ID,
        directory=("tmp_dir/cloud/%s" % (STUDY_ID)),
    )
    tuner.tuner_id = str(tuner_id)
    return tuner


def search_fn(tuner):
    # Start searching from different time points for each worker to avoid `model.build` collision.
    time.sleep(int(tuner.tuner_id) * 2)
    tuner.search(x=x, y=y, epochs=1, validation_data=(val_x, val_y), verbose=0)  # 5 epochs
    return tuner


num_parallel_trials = 4
tuners = [single_tuner(i) for i in range(num_parallel_trials)]
p = Pool(processes=num_parallel_trials)
result = p.map(search_fn, tuners)
p.close()
p.join()
result[0].results_summary()
print("SHARED", [len(t.oracle.trials) for t in result])
