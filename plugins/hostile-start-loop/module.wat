;; Hostile: a tool plugin whose core module loops forever in its start function, so
;; instantiation itself never finishes. The host must apply the call's deadline to
;; instantiation too.
;;
;; tests/build.rs embeds the `tool-plugin` world of ../../wit/plugin.wit into this module
;; and wraps it into a component with wit-component. The exports below have the
;; canonical-ABI core signatures of the `tool` interface; their bodies never run.
(module
  (memory (export "memory") 1)

  (func $spin
    (loop $forever
      (br $forever)))
  (start $spin)

  ;; cabi_realloc(old_ptr, old_len, align, new_len) -> ptr
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    unreachable)

  ;; list-tools: func() -> list<tool-spec>
  ;; The result (pointer, length) needs more than one flat value: it is returned
  ;; through a pointer to a return area.
  (func (export "glovebox:plugin/tool@0.1.0#list-tools") (result i32)
    unreachable)

  ;; call: func(ctx: call-context, tool: string, input: string) -> result<string, tool-error>
  ;; Flat parameters, 16 in all (the canonical ABI's limit before it passes a pointer):
  ;;   ctx.session-id: string            2  (ptr, len)
  ;;   ctx.session-name: option<string>  3  (discriminant, ptr, len)
  ;;   ctx.role: string                  2
  ;;   ctx.call-id: string               2
  ;;   ctx.job-id: option<string>        3
  ;;   tool: string                      2
  ;;   input: string                     2
  ;; The result flattens to 4 values, so it comes back through a return-area pointer.
  (func (export "glovebox:plugin/tool@0.1.0#call")
    (param i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32)
    (result i32)
    unreachable)
)
