"""Test-suite settings: passes check their graph promises (``modified``, ``changes_input``) on every run here,
which compiles skip by default (see ``vinerun.transformations.pass_infra.graph_checks``)."""

import os

os.environ["VINERUN_CHECK_PASSES"] = "1"
