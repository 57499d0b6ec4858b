"""Files from elsewhere that try to spend the server's memory or crash it (issue 20): Hugging Face configs and
weights, trace files (.npz), uploaded checkpoint zips, and the API's fields. Each is refused with a sentence, in
English and Chinese where a page shows it, before the costly part runs."""

import io
import json
import os
import shutil
import struct
import zipfile
from datetime import datetime, timedelta

import numpy as np
import pytest
import torch

from transformer_viz import Intervention, Trace
from transformer_viz.i18n import text
from transformer_viz.trace import export
from transformer_viz.weights import files, hf
from transformer_viz.weights.files import MAX_ZIP_ENTRIES, checkpoint_zip, read_upload
from transformer_viz.weights.pretrained import CHECKPOINT_DIR, load_pretrained

missing = hf.missing_reason()
needs_transformers = pytest.mark.skipif(missing is not None, reason=f"{missing}")
# The config: 2 x 20,000 layers of width 2 pass any parameter cap, and took 1.6 GB and a minute to build.
MANY_TINY_LAYERS = {"model_type": "t5", "vocab_size": 8, "d_model": 2, "d_kv": 1, "d_ff": 1, "num_layers": 20000,
                    "num_decoder_layers": 20000, "num_heads": 1, "decoder_start_token_id": 0}


def said_in_both_languages(error: ValueError, *words: str) -> None:
    """The refusal is a catalog sentence in English and Chinese, each naming `words`."""
    for lang in ("en", "zh"):
        sentence = text(f"detail.{error.key}", lang, **error.values)
        assert all(word in sentence for word in words), sentence
    assert str(error) == text(f"detail.{error.key}", "en", **error.values)


# 1. Hugging Face configs ------------------------------------------------------------------------------------------

@pytest.fixture
def nothing_is_built(monkeypatch):
    """transformers' model builders fail the test: a refusal must come from the config alone."""
    if missing is not None:
        pytest.skip(missing)
    import transformers

    def built(*args, **kwargs):
        raise AssertionError("a model was built")

    monkeypatch.setattr(transformers.AutoModelForSeq2SeqLM, "from_config", built)
    monkeypatch.setattr(transformers.AutoModelForSeq2SeqLM, "from_pretrained", built)


@pytest.mark.hf
def test_a_config_of_many_tiny_layers_is_refused_from_the_config_before_anything_is_built(tmp_path,
                                                                                           nothing_is_built):
    (tmp_path / "config.json").write_text(json.dumps(MANY_TINY_LAYERS))
    with pytest.raises(ValueError, match="num_layers to 20000") as refused:
        hf.load(str(tmp_path), max_parameters=int(5e8))
    said_in_both_languages(refused.value, "num_layers", "48")


@pytest.mark.hf
@pytest.mark.parametrize(("model_type", "field", "value"), [
    ("t5", "num_decoder_layers", 49), ("t5", "num_heads", 129), ("t5", "d_kv", 1025), ("t5", "d_ff", 65_537),
    ("t5", "vocab_size", 262_145), ("t5", "relative_attention_num_buckets", 1025), ("umt5", "num_layers", 0),
    ("mt5", "d_model", -4), ("bart", "encoder_layers", 49), ("bart", "decoder_ffn_dim", 65_537),
    ("bart", "max_position_embeddings", 4097), ("marian", "decoder_vocab_size", 262_145),
    ("marian", "max_position_embeddings", 4096),  # within its own limit, but 4,096 x 1,024 cells of Python
])
def test_every_size_of_a_hugging_face_config_is_bounded_without_a_parameter_cap(tmp_path, nothing_is_built,
                                                                                 model_type, field, value):
    small = {"d_model": 1024 if model_type == "marian" else 8, "vocab_size": 8, "pad_token_id": 0}
    (tmp_path / "config.json").write_text(json.dumps({"model_type": model_type, **small, field: value}))
    with pytest.raises(ValueError, match="was not loaded: its config sets") as refused:
        hf.load(str(tmp_path))  # no max_parameters: the sizes are bounded all the same
    said_in_both_languages(refused.value, field.split()[0])


@pytest.mark.hf
@pytest.mark.parametrize("config", [{"num_layers": "20000"}, {"num_layers": 1.5},
                                    {"d_model": 10, "encoder_attention_heads": 3, "model_type": "bart"},
                                    {"pad_token_id": 9, "vocab_size": 8, "model_type": "marian"}])
def test_a_config_of_the_wrong_type_or_shape_is_refused_with_a_sentence(tmp_path, nothing_is_built, config):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "t5", **config}))
    with pytest.raises(ValueError, match="its config") as refused:
        hf.load(str(tmp_path))
    said_in_both_languages(refused.value, str(tmp_path))


# 10. Hugging Face weights that are not what they say -------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_t5(tmp_path_factory):
    if missing is not None:
        pytest.skip(missing)
    from devtools.hf_tiny import save_tiny

    return save_tiny("t5", tmp_path_factory.mktemp("t5"))


class RunsCode:
    def __reduce__(self):
        return (os.getcwd, ())  # harmless, but not a tensor: torch.load(weights_only=True) refuses it


@pytest.mark.hf
def test_a_pickle_in_place_of_weights_is_refused_in_both_languages(tiny_t5, tmp_path):
    folder = tmp_path / "pickle"
    shutil.copytree(tiny_t5, folder)
    (folder / "model.safetensors").unlink()
    torch.save({"shared.weight": RunsCode()}, folder / "pytorch_model.bin")
    with pytest.raises(ValueError, match="more than tensors") as refused:
        hf.load(str(folder))
    said_in_both_languages(refused.value, "pytorch_model.bin", "pickle")


@pytest.mark.hf
@pytest.mark.parametrize("header", [
    json.dumps({"shared.weight": {"dtype": "F32", "shape": [10**9, 10**9], "data_offsets": [0, 8]}}).encode(),
    None,  # a header length of a terabyte
])
def test_a_lying_safetensors_header_is_refused_in_both_languages(tiny_t5, tmp_path, header):
    folder = tmp_path / "lying"
    shutil.copytree(tiny_t5, folder)
    data = struct.pack("<Q", 10**12) + b"{}" if header is None else struct.pack("<Q", len(header)) + header + bytes(8)
    (folder / "model.safetensors").write_bytes(data)
    with pytest.raises(ValueError, match="not what its header says") as refused:
        hf.load(str(folder))
    said_in_both_languages(refused.value, str(folder))


# 3. Trace files ---------------------------------------------------------------------------------------------------

def npz_bytes(entries: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def meta(names: list[str]) -> bytes:
    return npy(np.array(json.dumps({"format": export.FORMAT, "version": export.VERSION, "config": None,
                                    "src_tokens": None, "tgt_tokens": None, "intervention": None, "names": names})))


def test_a_trace_file_whose_arrays_exceed_the_trace_limit_is_refused_before_they_are_read(monkeypatch):
    monkeypatch.setattr(export, "MAX_FILE_BYTES", 2**20)
    reads, read_exactly = [], export.read_exactly

    def counted(member, size):
        reads.append(size)
        return read_exactly(member, size)

    monkeypatch.setattr(export, "read_exactly", counted)
    zeros = npy(np.zeros((2, 2**17), np.float32))  # 1 MiB, deflated to a few KiB
    data = npz_bytes({"meta.npy": meta(["x", "y"]), "tensor/x.npy": zeros, "tensor/y.npy": npy(np.zeros(4))},
                     zipfile.ZIP_DEFLATED)
    assert len(data) < 10_000
    with pytest.raises(ValueError, match=r"more than 1 MiB, the most a trace file holds \(tensor/x"):
        Trace.from_npz(io.BytesIO(data))
    assert len(reads) <= 1  # the meta at most


def npy_claiming(shape: tuple[int, ...], data: bytes) -> bytes:
    """An .npy file whose header claims float32 of `shape`, followed by `data`."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": "<f4", "fortran_order": False, "shape": shape})
    return buffer.getvalue() + data


@pytest.mark.parametrize(("shape", "message"), [((1000,), "announces"), ((10**6, 10**6), "more than 256 MiB"),
                                                ((2, 2, 2, 2, 2), "which a trace does not hold")])
def test_a_lying_npy_header_is_a_sentence_not_a_memory_error(shape, message):
    data = npz_bytes({"meta.npy": meta(["x"]), "tensor/x.npy": npy_claiming(shape, bytes(128))})
    with pytest.raises(ValueError, match=message):
        Trace.from_npz(io.BytesIO(data))


def test_a_trace_file_of_too_many_entries_is_refused_before_zipfile_reads_them(monkeypatch):
    data = npz_bytes({f"tensor/{i}.npy": b"" for i in range(export.MAX_TENSORS + 2)})

    def parsed(*args, **kwargs):
        raise AssertionError("zipfile read the entries")

    monkeypatch.setattr(export.zipfile, "ZipFile", parsed)
    with pytest.raises(ValueError, match="2,050 entries; a trace holds at most 2,048 tensors"):
        Trace.from_npz(io.BytesIO(data))


@pytest.mark.parametrize("array", [np.array([datetime(2026, 1, 1)], "datetime64[s]"), np.array([timedelta(1)]),
                                   np.array(["a", "b"]), np.zeros(2, complex)])
def test_a_trace_file_of_arrays_a_trace_does_not_hold_is_refused(array):
    data = npz_bytes({"meta.npy": meta(["x"]), "tensor/x.npy": npy(array)})
    with pytest.raises(ValueError, match="which a trace does not hold"):
        Trace.from_npz(io.BytesIO(data))


def test_a_corrupt_deflate_stream_in_a_trace_file_is_a_value_error():
    data = bytearray(npz_bytes({"meta.npy": meta(["x"]), "tensor/x.npy": npy(np.zeros(1000))}, zipfile.ZIP_DEFLATED))
    start = _data_offset(bytes(data), "tensor/x.npy")
    data[start] = 0xFF  # a final block of the reserved type 3: "invalid block type"
    with pytest.raises(ValueError, match="not a trace saved by"):
        Trace.from_npz(io.BytesIO(bytes(data)))


def _data_offset(data: bytes, name: str) -> int:
    """Where the (compressed) data of entry `name` starts in a zip archive."""
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo(name)
    name_length, extra_length = struct.unpack_from("<HH", data, info.header_offset + 26)
    return info.header_offset + 30 + name_length + extra_length


# 4. and 10. Uploaded zips -----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def upload_zip() -> bytes:
    loaded = load_pretrained("sort", CHECKPOINT_DIR)
    return checkpoint_zip(loaded.model, loaded.task, "sort")


def refused_upload(data: bytes) -> ValueError:
    with pytest.raises(ValueError) as refused:
        read_upload([("weights.zip", data)])
    return refused.value


@pytest.mark.parametrize("count", [5000, 70_000])  # 70,000: in zip64 form, whose count is in another record
def test_a_zip_of_many_entries_is_refused_before_any_entry_is_read(monkeypatch, count):
    data = npz_bytes({f"{i}.json": b"" for i in range(count)}, zipfile.ZIP_DEFLATED)

    def parsed(*args, **kwargs):
        raise AssertionError("zipfile read the entries")

    monkeypatch.setattr(files.zipfile, "ZipFile", parsed)
    error = refused_upload(data)
    assert error.key == "upload.zip_entries"
    said_in_both_languages(error, "weights.zip", f"{count:,}", str(MAX_ZIP_ENTRIES))


def test_a_zip_that_unpacks_to_more_than_an_upload_is_refused(upload_zip):
    buffer = io.BytesIO(upload_zip)
    with zipfile.ZipFile(buffer, "a", zipfile.ZIP_DEFLATED) as archive, archive.open("__MACOSX/._big", "w") as big:
        for _ in range(20):
            big.write(bytes(2**20))  # 20 MiB of zeros beside the checkpoint, 20 KiB deflated
    error = refused_upload(buffer.getvalue())
    assert error.key == "upload.zip_size"
    said_in_both_languages(error, "weights.zip", "MB")


def test_a_corrupt_deflate_stream_in_an_upload_is_refused_in_both_languages(upload_zip):
    data = bytearray(upload_zip)
    data[_data_offset(upload_zip, "sort.safetensors")] = 0xFF
    error = refused_upload(bytes(data))
    assert error.key == "upload.zip"
    said_in_both_languages(error, "weights.zip")


def test_an_encrypted_zip_is_refused_in_both_languages(upload_zip):
    data = bytearray(upload_zip)
    archive = zipfile.ZipFile(io.BytesIO(upload_zip))
    for info in archive.infolist():  # the "encrypted" flag in the local header and the central directory
        data[info.header_offset + 6] |= 0x1
    start = data.find(b"PK\x01\x02")
    while start >= 0:
        data[start + 8] |= 0x1
        start = data.find(b"PK\x01\x02", start + 4)
    error = refused_upload(bytes(data))
    assert error.key == "upload.encrypted"
    said_in_both_languages(error, "weights.zip")


# 11. The API's fields ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fields", [
    {"config": {"n_heads": 4}}, {"config": "ModelConfig"}, {"src_tokens": 5}, {"tgt_tokens": [1, 2]},
    {"src_tokens": [None]}, {"tensors": {"x": np.array([datetime(2026, 1, 1)])}},
    {"tensors": {"x": np.array([timedelta(1)])}}, {"tensors": {"x": np.array(["a"])}}, {"tensors": {1: torch.ones(1)}},
    {"tensors": [torch.ones(1)]}, {"intervention": {"ablate_heads": []}},
])
def test_a_trace_of_bad_fields_is_a_value_error_with_a_sentence(fields, tmp_path):
    with pytest.raises(ValueError, match=r"\w+ \w+ \w+"):
        trace = Trace(**{"tensors": {"logits": torch.zeros(1, 2, 3)}, **fields})
        trace.to_dataframe()
        trace.to_npz(tmp_path / "trace.npz")


@pytest.mark.parametrize("heads", [[(["cross"], 0, 0)], [({"kind": 1}, 0, 0)], 5, {("cross", 0, 0): 1}])
def test_unhashable_or_odd_heads_to_ablate_are_a_value_error(heads):
    with pytest.raises(ValueError, match="ablate_heads"):
        Intervention(ablate_heads=heads)


def test_a_bfloat16_trace_is_saved_as_float32(tmp_path):
    Trace({"logits": torch.ones(1, 2, 3, dtype=torch.bfloat16)}).to_npz(tmp_path / "trace.npz")
    assert Trace.from_npz(tmp_path / "trace.npz")["logits"].dtype == torch.float32


@pytest.mark.parametrize("uploaded", [[(None, b"{}")], [("weights.zip", "text")], [("weights.zip",)], "weights.zip",
                                      None, [("a.json", None)]])
def test_read_upload_of_bad_arguments_is_a_value_error_with_a_sentence(uploaded):
    with pytest.raises(ValueError, match=r"\(file name, content\) pair"):
        read_upload(uploaded)

