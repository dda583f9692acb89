"""Virtual devices: AUTO, MULTI (``auto/``), HETERO (``hetero/``) and BATCH (``batch/``).

They implement the plugin API like the real devices, and compile on the real ones through the Core's
services (``plugin.core``: compile_model, query_model, get_property on another device). They import
only plugin_api, ir, errors, properties and transformations; the runtime finds them through its
registry (``runtime/registry.py`` BUILTIN and the ``vinerun.plugins`` entry points).
"""
