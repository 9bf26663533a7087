import subprocess
import sys


def test_core_imports_without_streamlit_torch_or_llama_cpp():
    code = ("import sys, fairrag_core; "
            "print(sorted(m for m in ('torch', 'streamlit', 'llama_cpp', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
