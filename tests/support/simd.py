"""NumPy's runtime-dispatched SIMD targets, for tests that make a process compute as another CPU would."""

from __future__ import annotations


def available_vector_dispatch() -> list[str]:
    """NumPy's runtime-dispatched AVX-512 and AVX2-era targets this CPU has (none off x86-64): what
    ``NPY_DISABLE_CPU_FEATURES`` may name to run the loops a CPU without them would run."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    wanted = ("AVX512", "AVX2", "FMA3", "F16C", "AVX")
    return [name for name in __cpu_dispatch__ if __cpu_features__.get(name) and name.startswith(wanted)]
