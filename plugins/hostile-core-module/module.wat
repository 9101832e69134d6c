;; Hostile: a plain core WebAssembly module, not a component. The host must refuse it at
;; load time and say that a component was expected. Assembled by tests/build.rs.
(module
  (memory (export "memory") 1)
  (func (export "run") (result i32)
    i32.const 42)
)
