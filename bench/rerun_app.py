"""The app as `streamlit run app.py` serves it, and the CPU time of each script run (for bench/bench_rerun.py --server).

Each run of Streamlit's script thread (ScriptRunner._run_script: the script, its widgets and figures, the
messages it enqueues, the post-script GC) appends its thread CPU seconds and whether it was a fragment's run to
the file named by TV_RERUN_LOG. The first run installs the timer, so it is not in the file.
"""

import os
import time

from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

from transformer_viz.app.main import main

if not getattr(ScriptRunner, "_tv_timed", False):
    original = ScriptRunner._run_script

    def timed(runner, rerun_data):
        start = time.thread_time()
        try:
            return original(runner, rerun_data)
        finally:
            with open(os.environ["TV_RERUN_LOG"], "a") as log:
                log.write(f"{time.thread_time() - start:.6f} {int(bool(rerun_data.fragment_id_queue))}\n")

    ScriptRunner._run_script = timed
    ScriptRunner._tv_timed = True

main()
