"""SPECTER2-style adapters (paper 003, Fig. 5) on a tiny random BERT: adapter directories are
written here in the ``adapters`` library's on-disk format, nothing is downloaded."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from hybrid_ir.data.formats import write_records
from hybrid_ir.errors import ConfigError, HybridIRError, InputFormatError

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

torch = pytest.importorskip("torch")

from hybrid_ir.neural.adapters import attach_adapters  # noqa: E402
from hybrid_ir.neural.dense import SentenceEncoder, dense_search  # noqa: E402
from hybrid_ir.retrieval.retrievers import RETRIEVERS, Request  # noqa: E402

TEXTS = [
    "the integral of the function is a prime number",
    "let x be the root of the matrix norm inequality",
    "we show the sum of k and n",
]
HIDDEN, LAYERS, BOTTLENECK = 32, 2, 4
# What SeqBnConfig().to_dict() holds, as save_adapter writes it (adapters 1.3.0).
SEQ_BN = {
    "adapter_residual_before_ln": False,
    "cross_adapter": False,
    "dropout": 0.0,
    "factorized_phm_W": True,
    "factorized_phm_rule": False,
    "hypercomplex_nonlinearity": "glorot-uniform",
    "init_weights": "bert",
    "init_weights_seed": None,
    "inv_adapter": None,
    "inv_adapter_reduction_factor": None,
    "is_parallel": False,
    "learn_phm": True,
    "leave_out": [],
    "ln_after": False,
    "ln_before": False,
    "mh_adapter": False,
    "non_linearity": "relu",
    "original_ln_after": True,
    "original_ln_before": True,
    "output_adapter": True,
    "phm_bias": True,
    "phm_c_init": "normal",
    "phm_dim": 4,
    "phm_init_range": 0.0001,
    "phm_layer": False,
    "phm_rank": 1,
    "reduction_factor": 8,
    "residual_before_ln": True,
    "scaling": 1.0,
    "shared_W_phm": False,
    "shared_phm_rule": True,
    "stochastic_depth": 0.0,
    "use_gating": False,
}
DOUBLE_SEQ_BN = {
    **SEQ_BN,
    "original_ln_before": False,
    "mh_adapter": True,
    "non_linearity": "swish",
}


def write_adapter(
    path: Path,
    name: str = "[PRX]",
    seed: int = 0,
    config: dict | None = None,
    zero_up: bool = False,
    hidden: int = HIDDEN,
    layers: int = LAYERS,
    weights_name: str = "pytorch_adapter.bin",
    key_prefix: str = "bert.encoder.layer.",
    container: str = "adapters",
) -> Path:
    """An adapter directory as ``model.save_adapter(path, name)`` writes it for a BERT
    AdapterModel: ``adapter_config.json`` and the adapter's weights, random (seeded)."""
    config = SEQ_BN if config is None else config
    path.mkdir(parents=True, exist_ok=True)
    saved = {
        "config": config,
        "hidden_size": hidden,
        "model_class": "BertAdapterModel",
        "model_name": "tiny-bert",
        "model_type": "bert",
        "name": name,
        "version": "adapters.1.3.0",
    }
    (path / "adapter_config.json").write_text(json.dumps(saved, indent=2, sort_keys=True))
    generator = torch.Generator().manual_seed(seed)
    sublayers = ["output"] + (["attention.output"] if config["mh_adapter"] else [])
    state = {}
    for layer in range(layers):
        for where in sublayers:
            prefix = f"{key_prefix}{layer}.{where}.{container}.{name}."
            up = torch.zeros if zero_up else lambda *shape: torch.randn(*shape, generator=generator)
            state[prefix + "adapter_down.0.weight"] = torch.randn(
                BOTTLENECK, hidden, generator=generator
            )
            state[prefix + "adapter_down.0.bias"] = torch.randn(BOTTLENECK, generator=generator)
            state[prefix + "adapter_up.weight"] = up(hidden, BOTTLENECK)
            state[prefix + "adapter_up.bias"] = up(hidden)
    if weights_name.endswith(".safetensors"):
        from safetensors.torch import save_file

        save_file(state, str(path / weights_name))
    else:
        torch.save(state, path / weights_name)
    return path


def encoder(model: Path, **adapters: str | Path) -> SentenceEncoder:
    named = {key: str(value) for key, value in adapters.items()}
    return SentenceEncoder(str(model), pooling="cls", threads=1, batch_size=2, **named)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> Path:
    """A random 2-layer BERT (hidden 32) whose tokenizer knows the words of ``TEXTS``.

    (conftest's ``make_tiny_bert`` passes ``vocab_file``, which transformers 5 ignores, so its
    tokenizer maps every word to [UNK]; texts here must differ in content, not only length.)
    """
    from transformers import BertConfig, BertModel, BertTokenizerFast

    path = tmp_path_factory.mktemp("tiny-bert-vocab")
    words = sorted({word for text in TEXTS for word in text.split()} | {"prime", "matrix"})
    (path / "vocab.txt").write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])
    )
    tokenizer = BertTokenizerFast(vocab=str(path / "vocab.txt"), do_lower_case=True)
    tokenizer.save_pretrained(path)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(path)
    return path


def test_the_tiny_tokenizer_knows_the_words(tiny_bert):
    from transformers import AutoTokenizer

    pieces = AutoTokenizer.from_pretrained(tiny_bert)(TEXTS[0])["input_ids"]
    assert len(pieces) == 2 + len(TEXTS[0].split()) and 1 not in pieces  # 1 = [UNK]


@pytest.fixture(scope="module")
def base_embeddings(tiny_bert) -> np.ndarray:
    return encoder(tiny_bert).encode(TEXTS)


@pytest.mark.parametrize("config", [SEQ_BN, DOUBLE_SEQ_BN], ids=["pfeiffer", "houlsby"])
def test_a_zero_up_projection_gives_the_base_model_exactly(tmp_path, tiny_bert, config):
    zero = write_adapter(tmp_path / "zero", config=config, zero_up=True)
    adapted = encoder(tiny_bert, document_adapter=zero, query_adapter=zero)
    base = encoder(tiny_bert).encode(TEXTS)
    assert np.array_equal(adapted.encode(TEXTS), base)
    assert np.array_equal(adapted.encode(TEXTS, role="query"), base)


def test_query_and_document_adapters_change_embeddings_and_differ(
    tmp_path, tiny_bert, base_embeddings
):
    document = write_adapter(tmp_path / "proximity", "[PRX]", seed=1)
    query = write_adapter(tmp_path / "adhoc_query", "[QRY]", seed=2)
    both = encoder(tiny_bert, query_adapter=query, document_adapter=document)
    as_document = both.encode(TEXTS)
    as_query = both.encode(TEXTS, role="query")
    assert as_document.shape == as_query.shape == (3, HIDDEN)
    for embeddings in (as_document, as_query):
        np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-5)
        assert np.abs(embeddings - base_embeddings).max() > 0.05
    assert np.abs(as_document - as_query).max() > 0.05
    # Switching back and forth is stateless, and a side without an adapter is the base model.
    assert np.array_equal(both.encode(TEXTS), as_document)
    documents_only = encoder(tiny_bert, document_adapter=document)
    assert np.array_equal(documents_only.encode(TEXTS), as_document)
    assert np.array_equal(documents_only.encode(TEXTS, role="query"), base_embeddings)


def _layer_norm(values: np.ndarray, module) -> np.ndarray:
    mean = values.mean(-1, keepdims=True)
    variance = values.var(-1, keepdims=True)
    normed = (values - mean) / np.sqrt(variance + module.eps)
    return normed * module.weight.detach().double().numpy() + module.bias.detach().double().numpy()


def _linear(values: np.ndarray, weight, bias) -> np.ndarray:
    return values @ np.asarray(weight, dtype=np.float64).T + np.asarray(bias, dtype=np.float64)


@pytest.mark.parametrize(
    ("config", "where"),
    [(SEQ_BN, "output"), (DOUBLE_SEQ_BN, "output"), (DOUBLE_SEQ_BN, "attention.output")],
    ids=["pfeiffer-ffn", "houlsby-ffn", "houlsby-attention"],
)
def test_the_bottleneck_forward_matches_a_hand_computation(tmp_path, tiny_bert, config, where):
    from transformers import BertModel

    directory = write_adapter(tmp_path / "adapter", "a", seed=3, config=config)
    state = torch.load(directory / "pytorch_adapter.bin", weights_only=True)
    model = BertModel.from_pretrained(tiny_bert).eval()
    adapters = attach_adapters(model, {"document": directory})
    adapters.use("document")
    layer = model.encoder.layer[1]
    sublayer = layer.attention.output if where == "attention.output" else layer.output
    assert list(sublayer.adapters) == ["document"]
    assert ("document" in layer.attention.output.adapters) == config["mh_adapter"]
    seen = {}
    sublayer.register_forward_hook(lambda _, args, output: seen.update(args=args, output=output))
    ids = torch.tensor([[2, 5, 6, 7, 3]])
    with torch.no_grad():
        model(input_ids=ids)
    inputs, residual = (arg.double().numpy() for arg in seen["args"])
    base = sublayer.base
    hidden = _linear(inputs, base.dense.weight.detach(), base.dense.bias.detach())
    key = f"bert.encoder.layer.1.{where}.adapters.a."
    down_w, down_b = state[key + "adapter_down.0.weight"], state[key + "adapter_down.0.bias"]
    up_w, up_b = state[key + "adapter_up.weight"], state[key + "adapter_up.bias"]
    if config["original_ln_before"]:  # Pfeiffer: the bottleneck reads LN(h + x), adds h back
        down = np.maximum(
            _linear(_layer_norm(hidden + residual, base.LayerNorm), down_w, down_b), 0
        )
    else:  # Houlsby: the bottleneck reads h, with swish
        pre = _linear(hidden, down_w, down_b)
        down = pre / (1 + np.exp(-pre))
    expected = _layer_norm(_linear(down, up_w, up_b) + hidden + residual, base.LayerNorm)
    np.testing.assert_allclose(seen["output"].double().numpy(), expected, rtol=1e-4, atol=1e-5)
    # The base model's sub-layer output, for contrast: the adapter moved it.
    plain = _layer_norm(hidden + residual, base.LayerNorm)
    assert np.abs(expected - plain).max() > 0.05


def test_safetensors_legacy_key_names_and_a_preset_name_load_the_same_adapter(tmp_path, tiny_bert):
    standard = write_adapter(tmp_path / "bin", seed=4)
    legacy = write_adapter(
        tmp_path / "safe",
        seed=4,
        weights_name="adapter.safetensors",
        key_prefix="encoder.layer.",
        container="layer_text_task_adapters",
    )
    # adapter-transformers 2 wrote no version and could name the configuration by its preset.
    saved = json.loads((legacy / "adapter_config.json").read_text())
    del saved["version"]
    (legacy / "adapter_config.json").write_text(json.dumps({**saved, "config": "pfeiffer"}))
    expected = encoder(tiny_bert, document_adapter=standard).encode(TEXTS)
    assert np.array_equal(encoder(tiny_bert, document_adapter=legacy).encode(TEXTS), expected)


def _edit_config(directory: Path, **changes) -> Path:
    path = directory / "adapter_config.json"
    saved = json.loads(path.read_text())
    saved["config"] = changes.pop("config", {**saved["config"], **changes})
    path.write_text(json.dumps(saved))
    return directory


def _rename_weights(directory: Path, old: str, new: str) -> Path:
    path = directory / "pytorch_adapter.bin"
    state = torch.load(path, weights_only=True)
    torch.save({key.replace(old, new): value for key, value in state.items()}, path)
    return directory


def _replace_file(directory: Path, name: str, text: str | None) -> Path:
    if text is None:
        (directory / name).unlink()
    else:
        (directory / name).write_text(text)
    return directory


BAD_ADAPTERS = {
    "lora": (lambda d: _edit_config(d, architecture="lora"), "a lora adapter"),
    "parallel": (lambda d: _edit_config(d, is_parallel=True), "parallel bottleneck"),
    "gated": (lambda d: _edit_config(d, use_gating=True), "gated bottleneck"),
    "preset": (lambda d: _edit_config(d, config="lora"), "not a bottleneck preset"),
    "other name": (lambda d: _rename_weights(d, "[PRX]", "[CLF]"), "not a bottleneck adapter"),
    "too deep": (lambda d: _rename_weights(d, "layer.1.", "layer.5."), "layer 5; the model has 2"),
    "no norm": (lambda d: _edit_config(d, ln_after=True), "Missing key(s)"),
    "no weights": (lambda d: _replace_file(d, "pytorch_adapter.bin", None), "no adapter weights"),
    "bad json": (lambda d: _replace_file(d, "adapter_config.json", "{"), "not an adapter"),
}


@pytest.mark.parametrize("case", list(BAD_ADAPTERS))
def test_a_bad_adapter_is_a_one_line_error_naming_it(tmp_path, tiny_bert, case):
    spoil, message = BAD_ADAPTERS[case]
    directory = spoil(write_adapter(tmp_path / "adapter"))
    with pytest.raises(HybridIRError) as caught:
        encoder(tiny_bert, document_adapter=directory)
    assert message in str(caught.value) and "adapter" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_adapter_for_another_hidden_size_or_an_unknown_hub_id_is_a_config_error(
    tmp_path, tiny_bert, monkeypatch
):
    wide = write_adapter(tmp_path / "wide", hidden=64)
    with pytest.raises(ConfigError, match="hidden size 64, the model has 32"):
        encoder(tiny_bert, query_adapter=wide)
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(
        ConfigError, match="neither a local directory nor a reachable hub"
    ) as caught:
        encoder(tiny_bert, query_adapter="no-such-org/no-such-adapter")
    assert "hf download no-such-org/no-such-adapter" in str(caught.value)
    with pytest.raises(InputFormatError, match="adapter_config.json"):
        encoder(tiny_bert, query_adapter=tmp_path)  # a directory, but no adapter in it


def test_the_dense_retriever_encodes_queries_and_documents_with_their_adapters(tmp_path, tiny_bert):
    document = write_adapter(tmp_path / "proximity", "[PRX]", seed=5)
    query = write_adapter(tmp_path / "adhoc_query", "[QRY]", seed=6)
    corpus, topics = tmp_path / "corpus.jsonl", tmp_path / "topics.jsonl"
    write_records(
        corpus, [{"id": f"d{i}", "title": "", "text": text} for i, text in enumerate(TEXTS)]
    )
    queries = {"1": "prime function integral", "2": "matrix root"}
    write_records(topics, [{"id": qid, "title": "", "text": text} for qid, text in queries.items()])
    params = {
        "model": str(tiny_bert),
        "pooling": "cls",
        "batch_size": 2,
        "query_adapter": str(query),
        "document_adapter": str(document),
    }
    request = Request(corpus, topics, params, query_fields=["text"], depth=3, threads=1)
    run, facts = RETRIEVERS["dense"](request)
    assert facts["query_adapter"] == str(query) and facts["document_adapter"] == str(document)
    check = encoder(tiny_bert, query_adapter=query, document_adapter=document)
    documents = check.encode(TEXTS)
    ids = [f"d{i}" for i in range(3)]

    def expected(role: str):
        vectors = dict(zip(queries, check.encode(list(queries.values()), role=role), strict=True))
        return dense_search(ids, documents, vectors, 3)

    assert run == expected("query")
    assert run["1"] != expected("document")["1"]


def test_the_schema_accepts_the_adapter_params_and_names_a_misspelt_one():
    import copy

    import yaml

    from hybrid_ir.config.validation import validate_config

    repo = Path(__file__).resolve().parents[1]
    schema = repo / "workflow" / "schemas" / "config.schema.yaml"
    config = yaml.safe_load((repo / "config.yaml").read_text(encoding="utf-8"))
    specter2 = {
        "model": "allenai/specter2_base",
        "pooling": "cls",
        "query_adapter": "allenai/specter2_adhoc_query",
        "document_adapter": "allenai/specter2",
    }
    valid = copy.deepcopy(config)
    valid["retrievers"]["cf"]["dense-specter2-adapters"] = {"model": "dense", "params": specter2}
    commit = "3447645e1def9117997203454fa4495937bfbd83"
    valid["hub_models"] = {name: {"revision": commit} for name in specter2.values() if "/" in name}
    validate_config(valid, schema, "config.yaml")
    assert valid["retrievers"]["cf"]["dense-specter2-adapters"]["params"] == specter2
    misspelt = copy.deepcopy(config)
    misspelt["retrievers"]["cf"]["dense-minilm"]["params"]["query_adapters"] = "x"
    with pytest.raises(ConfigError) as caught:
        validate_config(misspelt, schema, "config.yaml")
    assert str(caught.value).startswith("config.yaml: retrievers.cf.dense-minilm.params: ")
    assert "'query_adapters' was unexpected" in str(caught.value)
