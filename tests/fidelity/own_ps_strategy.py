# ParameterServerStrategy (TF "Parameter server training" tutorial): an in-process cluster in a
# notebook, the job's own cluster (TF_CONFIG) when there is one.
# %%
import multiprocessing
import os
import socket

import tensorflow as tf


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def create_in_process_cluster(num_workers, num_ps):
    spec = {
        "worker": [f"localhost:{free_port()}" for _ in range(num_workers)],
        "ps": [f"localhost:{free_port()}" for _ in range(num_ps)],
    }
    cluster_spec = tf.train.ClusterSpec(spec)
    worker_config = tf.compat.v1.ConfigProto()
    if multiprocessing.cpu_count() < num_workers + 1:
        worker_config.inter_op_parallelism_threads = num_workers + 1
    for job, n in (("worker", num_workers), ("ps", num_ps)):
        for i in range(n):
            tf.distribute.Server(
                cluster_spec, job_name=job, task_index=i, config=worker_config, protocol="grpc"
            )
    return tf.distribute.cluster_resolver.SimpleClusterResolver(cluster_spec, rpc_layer="grpc")


if "TF_CONFIG" in os.environ:
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
else:
    resolver = create_in_process_cluster(2, 1)
strategy = tf.distribute.ParameterServerStrategy(resolver)
coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
print("workers:", len(resolver.cluster_spec().as_dict()["worker"]))
# %%
with strategy.scope():
    total = tf.Variable(0.0)


@tf.function
def add_one():
    total.assign_add(1.0)
    return total.read_value()


for _ in range(8):
    coordinator.schedule(add_one)
coordinator.join()
print("steps run:", int(total.numpy()))
