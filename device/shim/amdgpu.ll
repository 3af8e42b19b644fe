; Small pieces Rust cannot express on amdgcn, linked into every code object.
; Flat pointers; LLVM's address-space inference keeps them cheap after inlining.

define linkonce_odr hidden void @convgrad_workgroup_barrier() #0 {
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  ret void
}

define linkonce_odr hidden void @convgrad_atomic_add_f32(ptr %p, float %v) #0 {
  %old = atomicrmw fadd ptr %p, float %v syncscope("agent") monotonic, align 4
  ret void
}

; Split-K arrival: an agent-scope acquire-release counter bump by one thread,
; and the agent-scope fence every thread takes around it (`arrival_fence`):
; a wave's release waits only for its own writes.
define linkonce_odr hidden i32 @convgrad_arrive(ptr %p) #0 {
  %old = atomicrmw add ptr %p, i32 1 syncscope("agent") acq_rel, align 4
  ret i32 %old
}

define linkonce_odr hidden void @convgrad_fence_agent() #0 {
  fence syncscope("agent") acq_rel
  ret void
}

declare void @llvm.amdgcn.s.barrier() #1

attributes #0 = { alwaysinline nounwind }
attributes #1 = { convergent nounwind willreturn }
