"""Old module paths (before the layered layout) kept importable: ``roofline.analysis`` -> ``roofline.analyses.step``.

A meta-path finder answers an old dotted name with the module at its new home (the same module
object, not a copy), so scripts that import ``roofline.engines`` or run ``python -m roofline.e2e.profiles``
keep working.  New code imports the new homes.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import CodeType, ModuleType

#: Old path (under ``roofline.``) -> new path; a package's submodules follow it.
MOVED: dict[str, str] = {
    "analysis": "analyses.step",
    "calibration": "calibrate.kernels",
    "calibration.data": "calibrate.kernels.data",
    "calibration.fit": "calibrate.kernels.fit",
    "calibration.importers": "calibrate.kernels.importers",
    "calibration.keys": "kernels.keys",
    "calibration.lookup": "kernels.lookup",
    "calibration.lsq": "kernels.lsq",
    "calibration.measure": "calibrate.kernels.measure",
    "calibration.models": "kernels.forms",
    "calibration.predict": "kernels.predict",
    "calibration.report": "views.report.calibration",
    "calibration.schema": "kernels.schema",
    "checks": "core.checks",
    "chip": "deploy.rates",
    "cli": "views.cli",
    "collectives": "formulas.collectives",
    "compute": "formulas.compute",
    "cost": "formulas.cost",
    "diff": "analyses.diff",
    "e2e": "calibrate.engine",
    "e2e.report": "views.report.validation",
    "engines": "analyses.serve",
    "errors": "core.errors",
    "explain": "views.explain",
    "fabric": "deploy.fabric",
    "files": "core.files",
    "fmt": "core.fmt",
    "hf_checks": "specs.hf.checks",
    "hf_config": "specs.hf.config",
    "hf_core_families": "specs.hf.core_families",
    "hf_families": "specs.hf.families",
    "hf_fields": "specs.hf.fields",
    "hf_hybrid": "specs.hf.hybrid",
    "hf_quant": "specs.hf.quant",
    "kv_cache": "model.kv_cache",
    "lengths": "analyses.lengths",
    "memory": "model.memory",
    "model_shape": "model.shape",
    "multichip": "analyses.shard",
    "params": "model.params",
    "pareto": "analyses.pareto",
    "plan": "analyses.plan.capacity",
    "plan_sim": "analyses.plan.percentile",
    "report": "views.report",
    "report.pareto_report": "views.report.pareto_report",
    "serving": "formulas.serving",
    "sharding": "formulas.sharding",
    "simulate": "analyses.simulate",
    "spec_catalog": "specs.catalog",
    "spec_files": "specs.files",
    "spec_schema": "specs.schema",
    "spec_types": "specs.types",
    "step": "formulas.step",
    "sweep": "analyses.sweep.run",
    "sweep_frontier": "analyses.sweep.frontier",
    "sweep_kernel": "analyses.sweep.kernel",
    "sweep_options": "analyses.sweep.options",
    "sweep_plan": "analyses.sweep.layout",
    "sweep_result": "analyses.sweep.result",
    "textbook": "answer_key.book",
    "textbook_multichip": "answer_key.multichip",
    "topology": "deploy.topology",
    "units": "core.units",
    "user_catalog": "specs.user_catalog",
    "weight_bytes": "model.weight_bytes",
}


def new_name(fullname: str) -> str | None:
    """The new dotted name of an old ``roofline.*`` module, or None when it did not move."""
    parts = fullname.split(".")
    if parts[0] != "roofline":
        return None
    for i in range(len(parts), 1, -1):
        new = MOVED.get(".".join(parts[1:i]))
        if new is not None:
            return ".".join(["roofline", new, *parts[i:]])
    return None


class _AliasLoader(importlib.abc.Loader):
    """Loads an old name as the already-imported module at its new home."""

    def __init__(self, new: str) -> None:
        self.new = new
        self.spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.new)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self.spec  # the import system has just set the alias's spec; restore the real one

    def get_code(self, fullname: str) -> CodeType | None:
        """For ``python -m <old name>``: the new module's code."""
        spec = importlib.util.find_spec(self.new)
        loader = spec.loader if spec else None
        return loader.get_code(self.new) if isinstance(loader, importlib.abc.InspectLoader) else None


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("roofline."):
            return None
        new = new_name(fullname)
        if new is None:
            return None
        real = importlib.util.find_spec(new)
        if real is None:
            return None
        spec = importlib.util.spec_from_loader(
            fullname, _AliasLoader(new), origin=real.origin, is_package=real.submodule_search_locations is not None
        )
        return spec


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
