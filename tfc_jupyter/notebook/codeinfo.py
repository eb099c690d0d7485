"""What the job's code does, read from its syntax tree: the facts the strategy choice rests on.

Names are resolved through the script's imports (``import tensorflow.compat.v1 as tf1``,
``from tensorflow.distribute import MirroredStrategy``), never matched as text, so an alias or a
comment cannot fool it. Nothing is executed and nothing heavy is imported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field

from tfc_runtime.imports import guarded_imports  # one rule, in the job and here

from . import syntax

#: tf.distribute strategy classes a notebook may build itself.
STRATEGY_CLASSES = frozenset(
    {
        "MirroredStrategy",
        "MultiWorkerMirroredStrategy",
        "CollectiveAllReduceStrategy",
        "ParameterServerStrategy",
        "ParameterServerStrategyV2",
        "CentralStorageStrategy",
        "OneDeviceStrategy",
        "TPUStrategy",
        "TPUStrategyV2",
    }
)
#: Cluster resolvers: code that builds one reads the cluster itself.
RESOLVER_CLASSES = frozenset(
    {"TPUClusterResolver", "TFConfigClusterResolver", "SimpleClusterResolver"}
)
#: tf.config calls that must run before TensorFlow initializes its devices.
DEVICE_SETUP = frozenset(
    {
        "set_logical_device_configuration",
        "set_virtual_device_configuration",
        "set_memory_growth",
        "set_visible_devices",
        "set_inter_op_parallelism_threads",
        "set_intra_op_parallelism_threads",
    }
)
#: Methods Keras calls from ``fit``/``evaluate``/``predict`` (under its strategy's ``run``).
KERNEL_HANDLES = frozenset({"_tfc_job", "_tfc_plan"})
"""Names ``%%tfc_run`` binds in the kernel (the last job, the last dry run's plan)."""
KERAS_STEP_METHODS = frozenset({"train_step", "test_step", "predict_step"})
_COMPLEX = frozenset({"complex64", "complex128", "complex_"})
_TF_PREFIXES = ("tensorflow.compat.v1.", "tensorflow.compat.v2.")

Where = int  # a 1-based line of the script


@dataclass
class CodeFacts:
    """What the code does, each fact with the script line where it first shows (0: never)."""

    own_strategy: str = ""  # the tf.distribute strategy class the code builds itself
    own_strategy_line: Where = 0
    own_resolver: str = ""  # a cluster resolver the code builds itself
    own_resolver_line: Where = 0
    sets_default_strategy: Where = 0  # tf.distribute.experimental_set_strategy(...)
    strategy_aware: Where = 0  # strategy.run, get_strategy(), tfc_runtime.strategy()
    keras_fit: Where = 0  # model.fit(...) with model.compile(...) or Keras in the imports
    custom_loop: Where = 0  # GradientTape / apply_gradients / minimize outside a Keras step
    device_setup: str = ""  # the first tf.config call that must precede device initialization
    device_setup_line: Where = 0
    complex_values: Where = 0  # complex dtypes or literals
    estimator: bool = False
    asks_input: Where = 0  # input(): waits for a person, who is not there in a job
    colab: Where = 0  # from google.colab import ...: Colab's own modules
    kernel_handle: Where = 0  # reads _tfc_job / _tfc_plan, which only the kernel holds
    kernel_handle_name: str = ""
    keras_tuner: Where = 0  # import keras_tuner: its distributed search over the replicas
    names: dict[str, str] = field(default_factory=dict)  # alias -> qualified name
    strategies: set[str] = field(default_factory=set)  # every strategy class made or named

    @property
    def makes_own_strategy(self) -> bool:
        """The code builds (or installs) its own strategy or resolver: leave it alone."""
        return bool(self.own_strategy or self.own_resolver or self.sets_default_strategy)

    @property
    def own_what(self) -> str:
        """``MirroredStrategy``, ``TPUClusterResolver`` or ``default strategy``."""
        return self.own_strategy or self.own_resolver or "default strategy"

    @property
    def own_line(self) -> Where:
        """The script line of the code's own strategy, resolver or default strategy."""
        return self.own_strategy_line or self.own_resolver_line or self.sets_default_strategy


def _import_names(nodes: Iterable[ast.AST]) -> dict[str, str]:
    """alias -> fully qualified name, from every import among ``nodes`` (a tree's, walked)."""
    names: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    names[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name != "*":
                    names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def qualname(node: ast.AST, names: dict[str, str]) -> str:
    """``tensorflow.distribute.MirroredStrategy`` for ``tf.distribute.MirroredStrategy``; the
    dotted text for names that no import binds; "" for anything else (a call, a subscript)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append(names.get(node.id, node.id))
    text = ".".join(reversed(parts))
    for prefix in _TF_PREFIXES:
        if text.startswith(prefix):
            text = "tensorflow." + text[len(prefix) :]
    if text.startswith("keras."):
        text = "tensorflow." + text
    return text


def _receiver_name(func: ast.AST) -> str:
    """For ``a.b.run(...)``: ``b``; for ``x.run(...)``: ``x``."""
    if isinstance(func, ast.Attribute):
        value = func.value
        if isinstance(value, ast.Name):
            return value.id
        if isinstance(value, ast.Attribute):
            return value.attr
        if isinstance(value, ast.Call):
            return _receiver_name(value.func) or getattr(value.func, "attr", "")
    return ""


class _Visitor(ast.NodeVisitor):
    def __init__(self, facts: CodeFacts) -> None:
        self.facts = facts
        self.names = facts.names
        self.step_depth = 0  # inside a Keras train_step/test_step method
        self.step_methods: set[int] = set()  # id() of the class methods named like one
        self.checked_types: set[int] = set()  # id() of isinstance's classes and called names
        self.strategy_vars: set[str] = set()
        self.fit_line = 0
        self.compile_seen = False

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        methods = [i for i in node.body if isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for item in methods:  # a Keras step is a method (Model.train_step overridden)
            if item.name in KERAS_STEP_METHODS:
                self.step_methods.add(id(item))
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        # A top-level `def train_step` (TensorFlow's custom-loop guides) is the loop's own
        # step, not Keras': only a class's method of that name is Keras' train_step.
        inside = id(node) in self.step_methods
        self.step_depth += inside
        self.generic_visit(node)
        self.step_depth -= inside

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Assign(self, node: ast.Assign) -> None:
        if isinstance(node.value, ast.Call):
            name = qualname(node.value.func, self.names).rsplit(".", 1)[-1]
            if name in STRATEGY_CLASSES or name in ("get_strategy", "strategy", "tpu_strategy"):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.strategy_vars.add(target.id)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        first = not self.facts.kernel_handle
        if first and node.id in KERNEL_HANDLES and isinstance(node.ctx, ast.Load):
            self.facts.kernel_handle, self.facts.kernel_handle_name = node.lineno, node.id

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, complex) or node.value in _COMPLEX:
            self.facts.complex_values = self.facts.complex_values or node.lineno

    def _strategy_reference(self, node: ast.Attribute) -> None:
        """A strategy class named but not called here (``{"mirrored":
        tf.distribute.MirroredStrategy}[kind]()``): the code still makes its own strategy.
        ``isinstance(s, tf.distribute.MirroredStrategy)`` makes none."""
        f = self.facts
        named = node.attr in STRATEGY_CLASSES and id(node) not in self.checked_types
        if named and qualname(node, self.names).startswith("tensorflow"):
            f.strategies.add(node.attr)
            if not f.own_strategy:
                f.own_strategy, f.own_strategy_line = node.attr, node.lineno

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._strategy_reference(node)
        if node.attr in _COMPLEX and qualname(node, self.names).startswith(("tensorflow", "numpy")):
            self.facts.complex_values = self.facts.complex_values or node.lineno
        if node.attr == "GradientTape" and not self.step_depth:
            self.facts.custom_loop = self.facts.custom_loop or node.lineno
        if node.attr == "estimator" and qualname(node, self.names).startswith("tensorflow"):
            self.facts.estimator = True
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        f = self.facts
        full = qualname(node.func, self.names)
        if full in ("isinstance", "issubclass") and len(node.args) == 2:
            kinds = node.args[1]
            for kind in kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]:
                self.checked_types.add(id(kind))
        if isinstance(node.func, ast.Attribute):
            self.checked_types.add(id(node.func))  # a call: judged below, as a call
        last = full.rsplit(".", 1)[-1] if full else getattr(node.func, "attr", "")
        tf_call = full.startswith("tensorflow")
        if last in STRATEGY_CLASSES and tf_call:
            f.strategies.add(last)
        if last in STRATEGY_CLASSES and tf_call and not f.own_strategy:
            f.own_strategy, f.own_strategy_line = last, node.lineno
        elif last in RESOLVER_CLASSES and tf_call and not f.own_resolver:
            f.own_resolver, f.own_resolver_line = last, node.lineno
        elif last == "experimental_set_strategy" and tf_call:
            f.sets_default_strategy = f.sets_default_strategy or node.lineno
        elif last in DEVICE_SETUP and tf_call and not f.device_setup:
            f.device_setup, f.device_setup_line = full.removeprefix("tensorflow."), node.lineno
        elif last == "complex" and tf_call:
            f.complex_values = f.complex_values or node.lineno
        elif last in ("get_strategy", "strategy") and (tf_call or full.startswith("tfc_runtime")):
            f.strategy_aware = f.strategy_aware or node.lineno
        elif last in ("run", "experimental_run_v2", "experimental_run") and isinstance(
            node.func, ast.Attribute
        ):
            receiver = _receiver_name(node.func)
            if receiver in self.strategy_vars or "strateg" in receiver.lower():
                f.strategy_aware = f.strategy_aware or node.lineno
        elif last in ("apply_gradients", "minimize") and not self.step_depth:
            if not full.startswith("scipy"):
                f.custom_loop = f.custom_loop or node.lineno
        elif full in ("input", "getpass.getpass", "getpass"):
            f.asks_input = f.asks_input or node.lineno
        elif last == "fit" and isinstance(node.func, ast.Attribute):
            self.fit_line = self.fit_line or node.lineno
        elif last == "compile" and isinstance(node.func, ast.Attribute):
            self.compile_seen = True
        self.generic_visit(node)


def analyse(text: str) -> CodeFacts:
    """The facts of a script's source (empty facts when it does not parse)."""
    facts = CodeFacts()
    try:
        shared = syntax.parsed(text)
    except SyntaxError:
        return facts
    tree = shared.tree
    facts.names = _import_names(shared.nodes)
    guarded = guarded_imports(tree)
    for node in shared.nodes:
        if id(node) in guarded:  # the code handles the import failing
            continue
        module = ""
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            module = node.module
        elif isinstance(node, ast.Import):
            module = node.names[0].name
        if module.split(".")[:2] == ["google", "colab"] and not facts.colab:
            facts.colab = getattr(node, "lineno", 0)
        if module.split(".")[0] in ("keras_tuner", "kerastuner") and not facts.keras_tuner:
            facts.keras_tuner = getattr(node, "lineno", 0)
    visitor = _Visitor(facts)
    visitor.visit(tree)
    uses_keras = any(
        v.startswith(("keras", "tensorflow.keras", "tf_keras")) or v == "tensorflow"
        for v in facts.names.values()
    )
    if visitor.fit_line and (visitor.compile_seen or uses_keras):
        facts.keras_fit = visitor.fit_line
    return facts
