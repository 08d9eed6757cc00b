"""CPU tests (interpreter) and GPU tests (marked gpu) for flash_attention."""
