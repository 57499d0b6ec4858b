"""Traced vs untraced forward time: `python bench/bench_trace.py`.

Prints the median time of each and their ratio, for the encoder-decoder and the decoder-only model (budget:
traced <= 1.3x untraced at the default config, batch 1, 16 tokens; decoder-only <= 1.1x at the default size and at
6 layers x 8 heads x 64 tokens).

The process's allocator is set as the app's server sets it (app/server/allocator.py: freed trace memory stays
mapped); `--glibc-defaults` measures with glibc's own settings instead.
"""

import argparse
import statistics
import time

import torch

from transformer_viz import ModelConfig
from transformer_viz.app.server.allocator import keep_freed_memory_mapped
from transformer_viz.model import build_model


def median_ms(fn, repeats: int) -> float:
    for _ in range(20):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def measure(label: str, config: ModelConfig, length: int, repeats: int = 300) -> None:
    generator = torch.Generator().manual_seed(0)
    model = build_model(config, generator=generator).eval()
    src = torch.randint(1, config.src_vocab_size, (1, length), generator=generator)
    tgt = torch.randint(1, config.tgt_vocab_size, (1, length), generator=generator)
    inputs = (tgt,) if config.architecture == "decoder_only" else (src, tgt)

    def untraced():
        with torch.inference_mode():
            model(*inputs)

    def traced():
        model.run_with_trace(*inputs)

    # Interleave the two so that machine noise hits both alike.
    plain, recorded = [], []
    for _ in range(3):
        plain.append(median_ms(untraced, repeats // 3))
        recorded.append(median_ms(traced, repeats // 3))
    plain_ms, traced_ms = statistics.median(plain), statistics.median(recorded)
    print(f"{label:<34} untraced {plain_ms:7.3f} ms   traced {traced_ms:7.3f} ms   ratio {traced_ms / plain_ms:5.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--glibc-defaults", action="store_true", help="leave the C allocator as glibc sets it")
    as_server = not parser.parse_args().glibc_defaults and keep_freed_memory_mapped()
    torch.set_num_threads(1)
    allocator = "as the app's server sets it" if as_server else "C library defaults"
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread, allocator {allocator}")
    measure("default (2+2 layers, 4 heads), 16 tok", ModelConfig(src_vocab_size=20, tgt_vocab_size=20), 16)
    measure("6+6 layers x 8 heads, 32 tok", ModelConfig(
        src_vocab_size=20, tgt_vocab_size=20, n_heads=8, n_encoder_layers=6, n_decoder_layers=6), 32)
    decoder_only = dict(src_vocab_size=31, tgt_vocab_size=31, architecture="decoder_only")
    measure("decoder-only, default (2 layers), 16 tok", ModelConfig(**decoder_only), 16)
    measure("decoder-only, 6 layers x 8 heads, 64 tok", ModelConfig(
        **decoder_only, n_heads=8, n_decoder_layers=6, max_len=64), 64)
    measure("decoder-only, rotary, 6 x 8, 64 tok", ModelConfig(
        **decoder_only, n_heads=8, n_decoder_layers=6, max_len=64, positional="rotary"), 64)
