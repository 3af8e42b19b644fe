; Small pieces Rust cannot express on nvptx64, linked into every PTX module.

define linkonce_odr hidden void @convgrad_atomic_add_f32(ptr %p, float %v) #0 {
  %old = atomicrmw fadd ptr %p, float %v monotonic, align 4
  ret void
}

attributes #0 = { alwaysinline nounwind }
