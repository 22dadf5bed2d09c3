# Logs every Triton compile's cache-key parts (source hash inputs, options) to $KL_DIAG_LOG.
import os, threading, time
_log = os.environ.get("KL_DIAG_LOG")
if _log:
    def _w(msg):
        with open(_log, "a") as f:
            f.write(f"{time.time():.3f} pid={os.getpid()} {threading.current_thread().name} {msg}\n")
    try:
        import triton.compiler.compiler as cc
        _h = cc.ASTSource.hash
        def hash_(self):
            r = _h(self)
            _w(f"ASTSource.hash {self.fn.__name__} -> {r[:12]} sig={self.signature} const={self.constants} attrs={self.attrs}")
            return r
        cc.ASTSource.hash = hash_
        from triton.backends.nvidia import compiler as nc
        _oh = nc.CUDAOptions.hash
        def ohash(self):
            r = _oh(self)
            _w(f"options.hash -> {r[:12]} {sorted((k, v) for k, v in self.__dict__.items() if k not in ('extern_libs',))}")
            return r
        nc.CUDAOptions.hash = ohash
        import triton.runtime.cache as rc
        _gcm = rc.get_cache_manager
        def gcm(key):
            m = _gcm(key)
            _w(f"cache_manager {key[:12]} exists={os.path.isdir(getattr(m, 'cache_dir', '') or '')}")
            return m
        rc.get_cache_manager = gcm
        cc.get_cache_manager = gcm
        _comp = cc.compile
        _w("diag installed")
    except Exception as e:
        _w(f"diag failed {e!r}")
