# TensorFlow Cloud's example `core/tests/examples/call_run_on_script_with_keras_ctl.py`, as a
# migrating user runs it: `import tfc_jupyter as tfc` is the only change.
import tfc_jupyter as tfc

tfc.run(
    entry_point="tests/testdata/mnist_example_using_ctl.py",
    distribution_strategy=None,
    worker_count=1,
    requirements_txt="tests/testdata/requirements.txt",
    stream_logs=True,
)
