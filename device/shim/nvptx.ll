; Small pieces Rust cannot express on nvptx64, linked into every PTX module.
; Pointers arrive generic; the casts fold once the calls are inlined into
; code that got them from the shared-memory global or a kernel parameter.

; A reduction, not an atomic with a result: LLVM emits `atom` for an
; `atomicrmw fadd` whose result is unused, which ptxas turned into `red` only
; while no fence followed (split-K arrivals brought one: ncu then counted no
; `red` requests at all).
define linkonce_odr hidden void @convgrad_atomic_add_f32(ptr %p, float %v) #0 {
  %g = addrspacecast ptr %p to ptr addrspace(1)
  call void asm sideeffect "red.global.add.f32 [$0], $1;", "l,f,~{memory}"(ptr addrspace(1) %g, float %v)
  ret void
}

; Split-K arrival, by one thread after a workgroup barrier: the counter bump
; between two gpu-scope acquire-release fences, which are cumulative over the
; barrier (the workgroup's partials are released, the others' acquired).
define linkonce_odr hidden i32 @convgrad_arrive(ptr %p) #0 {
  call void asm sideeffect "fence.acq_rel.gpu;", "~{memory}"()
  %old = atomicrmw add ptr %p, i32 1 monotonic, align 4
  call void asm sideeffect "fence.acq_rel.gpu;", "~{memory}"()
  ret i32 %old
}

; Copies 16 bytes, or zero-fills them when %valid is false (source size 0,
; from a valid global address all the same): no branch, so lanes with and
; without data stay converged.
@convgrad_zero16 = linkonce_odr hidden addrspace(1) constant [16 x i8] zeroinitializer, align 16

define linkonce_odr hidden void @convgrad_cp_async16_if(ptr %dst, ptr %src, i1 %valid) #0 {
  %d = addrspacecast ptr %dst to ptr addrspace(3)
  %g = addrspacecast ptr %src to ptr addrspace(1)
  %s = select i1 %valid, ptr addrspace(1) %g, ptr addrspace(1) @convgrad_zero16
  %n = select i1 %valid, i32 16, i32 0
  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %d, ptr addrspace(1) %s, i32 %n)
  ret void
}

define linkonce_odr hidden void @convgrad_cp_async_commit() #0 {
  call void @llvm.nvvm.cp.async.commit.group()
  ret void
}

define linkonce_odr hidden void @convgrad_cp_async_wait0() #0 {
  call void @llvm.nvvm.cp.async.wait.group(i32 0)
  ret void
}
define linkonce_odr hidden void @convgrad_cp_async_wait1() #0 {
  call void @llvm.nvvm.cp.async.wait.group(i32 1)
  ret void
}
define linkonce_odr hidden void @convgrad_cp_async_wait2() #0 {
  call void @llvm.nvvm.cp.async.wait.group(i32 2)
  ret void
}
define linkonce_odr hidden void @convgrad_cp_async_wait3() #0 {
  call void @llvm.nvvm.cp.async.wait.group(i32 3)
  ret void
}

; ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16: lane l gives the address
; of row l%8 of matrix l/8. Returned as a vector (Rust's repr(simd) [u32; 4]).
define linkonce_odr hidden <4 x i32> @convgrad_ldmatrix_x4(ptr %p) #0 {
  %s = addrspacecast ptr %p to ptr addrspace(3)
  %r = call { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16(ptr addrspace(3) %s)
  %v = call <4 x i32> @convgrad_vec4(ptr %p, { i32, i32, i32, i32 } %r)
  ret <4 x i32> %v
}
define linkonce_odr hidden <4 x i32> @convgrad_ldmatrix_x4_trans(ptr %p) #0 {
  %s = addrspacecast ptr %p to ptr addrspace(3)
  %r = call { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16(ptr addrspace(3) %s)
  %v = call <4 x i32> @convgrad_vec4(ptr %p, { i32, i32, i32, i32 } %r)
  ret <4 x i32> %v
}
define linkonce_odr hidden <4 x i32> @convgrad_vec4(ptr %unused, { i32, i32, i32, i32 } %r) #0 {
  %a = extractvalue { i32, i32, i32, i32 } %r, 0
  %b = extractvalue { i32, i32, i32, i32 } %r, 1
  %c = extractvalue { i32, i32, i32, i32 } %r, 2
  %d = extractvalue { i32, i32, i32, i32 } %r, 3
  %v0 = insertelement <4 x i32> poison, i32 %a, i32 0
  %v1 = insertelement <4 x i32> %v0, i32 %b, i32 1
  %v2 = insertelement <4 x i32> %v1, i32 %c, i32 2
  %v3 = insertelement <4 x i32> %v2, i32 %d, i32 3
  ret <4 x i32> %v3
}

; f32 -> bf16 bits, rounded to nearest even: one `cvt.rn.bf16.f32` (sm_80+)
; instead of the integer rounding sequence.
define linkonce_odr hidden i16 @convgrad_f32_to_bf16(float %v) #0 {
  %t = fptrunc float %v to bfloat
  %b = bitcast bfloat %t to i16
  ret i16 %b
}

declare void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3), ptr addrspace(1), i32)
declare void @llvm.nvvm.cp.async.commit.group()
declare void @llvm.nvvm.cp.async.wait.group(i32 immarg)
declare { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16(ptr addrspace(3))
declare { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16(ptr addrspace(3))

attributes #0 = { alwaysinline nounwind }
