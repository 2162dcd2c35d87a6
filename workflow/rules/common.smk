import os
import re

from snakemake.exceptions import WorkflowError

from hybrid_ir import paths
from hybrid_ir.checks import checks_from_expected
from hybrid_ir.config import load_expected, validate_config
from hybrid_ir.errors import HybridIRError
from hybrid_ir.fetch import load_manifest, mirror_root

try:
    validate_config(
        config,
        os.path.join(workflow.basedir, "workflow", "schemas", "config.schema.yaml"),
        source="config",
    )
    MANIFEST = load_manifest(config["manifest"])
    EXPECTED = load_expected(config["expected"])
except (HybridIRError, OSError) as error:
    raise WorkflowError(f"hybrid-ir: {error}") from None

MIRROR = mirror_root(config["mirror"])
COLLECTIONS = config["collections"]
BM25 = config["bm25"]
LAYOUTS = ("flat", "multifield")
# One environment for every rule; its path is relative to the rule files in workflow/rules.
CONDA_ENV = "../../envs/hybrid-ir.yaml"


def alternatives(names):
    """A wildcard constraint matching exactly the given names."""
    return "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True)) or "(?!)"


def sources_of(name):
    """Reader role -> fetched raw file, after checking each file is in the manifest."""
    sources = COLLECTIONS[name]["sources"]
    for role, path in sources.items():
        if path not in MANIFEST:
            raise WorkflowError(
                f"hybrid-ir: config: collections.{name}.sources.{role}: {path!r} is not in the "
                f"manifest {config['manifest']}"
            )
    return {role: paths.raw(path) for role, path in sources.items()}


def converted_outputs(name):
    """Every canonical file a collection's reader writes, keyed as the converter expects."""
    collection = COLLECTIONS[name]
    outputs = {}
    if collection.get("corpus", True):
        outputs["corpus"] = paths.corpus(name)
    outputs |= {f"topics_{s}": paths.topics(name, s) for s in collection["topics"]}
    outputs |= {f"qrels_{s}": paths.qrels(name, s) for s in collection["qrels"]}
    outputs |= {f"table_{s}": paths.table(name, s) for s in collection.get("tables", [])}
    return outputs


def bm25_evaluations(name):
    experiment = BM25["experiments"][name]
    return [
        paths.evaluation(name, experiment["topics"], f"bm25-{layout}", qrels)
        for layout in experiment["layouts"]
        for qrels in experiment["qrels"]
    ]


def expected_artifacts():
    """The evaluation and index-statistics files the expected-score checks read."""
    return sorted({check.source for document in EXPECTED for check in checks_from_expected(document)})


def measures_for(collection, system, qrels):
    """Configured measures plus any metric an expected-scores file asks of this run."""
    experiment = BM25["experiments"].get(collection, {})
    measures = list(experiment.get("qrels", {}).get(qrels, []))
    for document in EXPECTED:
        if document["collection"] == collection:
            for metric in document.get("runs", {}).get(system, {}).get(qrels, {}):
                if metric not in measures:
                    measures.append(metric)
    return measures


def all_targets():
    targets = [output for name in COLLECTIONS for output in converted_outputs(name).values()]
    if BM25["experiments"]:
        targets += ["results/tables/bm25.md", "results/tables/bm25.csv"]
    if EXPECTED:
        targets.append("results/checks/passed")
    return targets


wildcard_constraints:
    collection=alternatives(COLLECTIONS),
    layout=alternatives(LAYOUTS),
    topics=alternatives({s for c in COLLECTIONS.values() for s in c["topics"]}),
    qrels=alternatives({s for c in COLLECTIONS.values() for s in c["qrels"]}),
