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

declare void @llvm.amdgcn.s.barrier() #1

attributes #0 = { alwaysinline nounwind }
attributes #1 = { convergent nounwind willreturn }
