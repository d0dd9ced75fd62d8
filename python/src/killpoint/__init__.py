"""killpoint for Python users: the binaries are on PATH (`killpoint`, `killpoint-tracer`, `killpoint-runtime`); the pytest plugin is `killpoint.pytest_plugin`."""
