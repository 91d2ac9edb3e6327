target triple = "amdgcn-amd-amdhsa"

define amdgpu_kernel void @"k"(i64 %".1") "amdgpu-flat-work-group-size"="1,1024"
{
entry:
  %"params" = alloca [8 x i8], align 8, addrspace(5)
  %".3" = getelementptr i8, ptr addrspace(5) %"params", i64 0
  store i64 %".1", ptr addrspace(5) %".3", align 8
  %"%r0" = alloca i32, addrspace(5)
  %"%r1" = alloca i32, addrspace(5)
  %"%r2" = alloca i32, addrspace(5)
  %"%r3" = alloca i32, addrspace(5)
  %"%r4" = alloca i32, addrspace(5)
  %"%r5" = alloca i32, addrspace(5)
  %"%r6" = alloca i32, addrspace(5)
  %"%r7" = alloca i32, addrspace(5)
  %"%r8" = alloca i32, addrspace(5)
  %"%r9" = alloca i32, addrspace(5)
  %"%r10" = alloca i32, addrspace(5)
  %"%r11" = alloca i32, addrspace(5)
  %"%r12" = alloca i32, addrspace(5)
  %"%r13" = alloca i32, addrspace(5)
  %"%r14" = alloca i32, addrspace(5)
  %"%r15" = alloca i32, addrspace(5)
  %"%rd0" = alloca i64, addrspace(5)
  %"%rd1" = alloca i64, addrspace(5)
  %"%rd2" = alloca i64, addrspace(5)
  %"%rd3" = alloca i64, addrspace(5)
  %"%rd4" = alloca i64, addrspace(5)
  %"%rd5" = alloca i64, addrspace(5)
  %"%rd6" = alloca i64, addrspace(5)
  %"%rd7" = alloca i64, addrspace(5)
  %"%p0" = alloca i1, addrspace(5)
  %"%p1" = alloca i1, addrspace(5)
  %"%p2" = alloca i1, addrspace(5)
  %"%p3" = alloca i1, addrspace(5)
  br label %"entry.1"
entry.1:
  %".6" = call i32 @"llvm.amdgcn.workitem.id.x"()
  store i32 %".6", ptr addrspace(5) %"%r2"
  %".8" = load i32, ptr addrspace(5) %"%r2"
  %".9" = zext i32 %".8" to i64
  store i64 %".9", ptr addrspace(5) %"%rd2"
  %".11" = load i32, ptr addrspace(5) %"%r2"
  %".12" = icmp ult i32 %".11", 5
  %".13" = xor i1 %".12", -1
  store i1 %".12", ptr addrspace(5) %"%p1"
  %".15" = load i1, ptr addrspace(5) %"%p1"
  %".16" = call i64 @"llvm.amdgcn.ballot.i64"(i1 %".15")
  %".17" = call i32 @"llvm.amdgcn.mbcnt.lo"(i32 -1, i32 0)
  %".18" = call i32 @"llvm.amdgcn.mbcnt.hi"(i32 -1, i32 %".17")
  %".19" = and i32 %".18", 32
  %".20" = zext i32 %".19" to i64
  %".21" = lshr i64 %".16", %".20"
  %".22" = trunc i64 %".21" to i32
  %".23" = and i32 %".22", 4294967295
  %".24" = call i64 @"llvm.amdgcn.ballot.i64"(i1 1)
  %".25" = call i32 @"llvm.amdgcn.mbcnt.lo"(i32 -1, i32 0)
  %".26" = call i32 @"llvm.amdgcn.mbcnt.hi"(i32 -1, i32 %".25")
  %".27" = and i32 %".26", 32
  %".28" = zext i32 %".27" to i64
  %".29" = lshr i64 %".24", %".28"
  %".30" = trunc i64 %".29" to i32
  %".31" = and i32 %".30", 4294967295
  %".32" = icmp ne i32 %".23", 0
  %".33" = icmp eq i32 %".23", %".31"
  %".34" = xor i1 %".32", -1
  %".35" = or i1 %".33", %".34"
  store i1 %".35", ptr addrspace(5) %"%p2"
  %".37" = load i1, ptr addrspace(5) %"%p2"
  %".38" = select  i1 %".37", i32 1, i32 0
  store i32 %".38", ptr addrspace(5) %"%r1"
  %".40" = load i64, ptr addrspace(5) %".3", align 8
  store i64 %".40", ptr addrspace(5) %"%rd1"
  %".42" = load i64, ptr addrspace(5) %"%rd1"
  %".43" = inttoptr i64 %".42" to ptr addrspace(1)
  %".44" = load i32, ptr addrspace(5) %"%r1"
  store i32 %".44", ptr addrspace(1) %".43", align 4
  ret void
after_ret:
  ret void
}

declare i32 @"llvm.amdgcn.workitem.id.x"()

declare i64 @"llvm.amdgcn.ballot.i64"(i1 %".1")

declare i32 @"llvm.amdgcn.mbcnt.lo"(i32 %".1", i32 %".2")

declare i32 @"llvm.amdgcn.mbcnt.hi"(i32 %".1", i32 %".2")

!llvm.module.flags = !{ !0 }
!0 = !{ i32 1, !"amdhsa_code_object_version", i32 400 }
