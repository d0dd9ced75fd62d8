#!/nonexistent/killpoint-hostile-shell
# Exists and is executable, but its interpreter does not exist: exec fails with ENOENT.
