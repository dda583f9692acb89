"""Known failures of the reductions / softmax / Gemm / Einsum / losses area."""

EXPECTED_FAILURES: list[tuple[str, str]] = [
    (r"^test_attention_4d_causal_fp16_expanded_cpu$",
     "the expected output rounds every step of the f16 Softmax (exp, sum, divide) to f16; vinerun computes "
     "f16 Softmax in f32 and rounds once, 2 f16 ulps away on 2 of 192 values, beyond the test's rtol 1e-3"),
]
