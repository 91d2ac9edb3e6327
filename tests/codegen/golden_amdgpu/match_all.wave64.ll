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
  %".15" = load i64, ptr addrspace(5) %"%rd2"
  %".16" = call i64 @"llvm.amdgcn.ballot.i64"(i1 1)
  %".17" = call i32 @"llvm.amdgcn.mbcnt.lo"(i32 -1, i32 0)
  %".18" = call i32 @"llvm.amdgcn.mbcnt.hi"(i32 -1, i32 %".17")
  %".19" = and i32 %".18", 32
  %".20" = zext i32 %".19" to i64
  %".21" = lshr i64 %".16", %".20"
  %".22" = trunc i64 %".21" to i32
  %".23" = and i32 4294967295, %".22"
  br label %"lanes"
lanes:
  %"lane" = phi  i32 [0, %"entry.1"], [%".56", %"lanes"]
  %"acc" = phi  i32 [0, %"entry.1"], [%".55", %"lanes"]
  %".25" = call i32 @"llvm.amdgcn.mbcnt.lo"(i32 -1, i32 0)
  %".26" = call i32 @"llvm.amdgcn.mbcnt.hi"(i32 -1, i32 %".25")
  %".27" = and i32 %".26", 32
  %".28" = or i32 %".27", %"lane"
  %".29" = shl i32 %".28", 2
  %".30" = trunc i64 %".15" to i32
  %".31" = call i32 @"llvm.amdgcn.mbcnt.lo"(i32 -1, i32 0)
  %".32" = call i32 @"llvm.amdgcn.mbcnt.hi"(i32 -1, i32 %".31")
  %".33" = and i32 %".32", 32
  %".34" = or i32 %".33", %"lane"
  %".35" = shl i32 %".34", 2
  %".36" = call i32 @"llvm.amdgcn.ds.bpermute"(i32 %".35", i32 %".30")
  %".37" = lshr i64 %".15", 32
  %".38" = trunc i64 %".37" to i32
  %".39" = call i32 @"llvm.amdgcn.mbcnt.lo"(i32 -1, i32 0)
  %".40" = call i32 @"llvm.amdgcn.mbcnt.hi"(i32 -1, i32 %".39")
  %".41" = and i32 %".40", 32
  %".42" = or i32 %".41", %"lane"
  %".43" = shl i32 %".42", 2
  %".44" = call i32 @"llvm.amdgcn.ds.bpermute"(i32 %".43", i32 %".38")
  %".45" = zext i32 %".36" to i64
  %".46" = zext i32 %".44" to i64
  %".47" = shl i64 %".46", 32
  %".48" = or i64 %".45", %".47"
  %".49" = lshr i32 %".23", %"lane"
  %".50" = trunc i32 %".49" to i1
  %".51" = icmp eq i64 %".48", %".15"
  %".52" = and i1 %".50", %".51"
  %".53" = zext i1 %".52" to i32
  %".54" = shl i32 %".53", %"lane"
  %".55" = or i32 %"acc", %".54"
  %".56" = add i32 %"lane", 1
  %".57" = icmp ult i32 %".56", 32
  br i1 %".57", label %"lanes", label %"lanes.done"
lanes.done:
  %".59" = icmp eq i32 %".55", %".23"
  %".60" = select  i1 %".59", i32 %".23", i32 0
  store i32 %".60", ptr addrspace(5) %"%r1"
  store i1 %".59", ptr addrspace(5) %"%p2"
  %".63" = load i64, ptr addrspace(5) %".3", align 8
  store i64 %".63", ptr addrspace(5) %"%rd1"
  %".65" = load i64, ptr addrspace(5) %"%rd1"
  %".66" = inttoptr i64 %".65" to ptr addrspace(1)
  %".67" = load i32, ptr addrspace(5) %"%r1"
  store i32 %".67", ptr addrspace(1) %".66", align 4
  ret void
after_ret:
  ret void
}

declare i32 @"llvm.amdgcn.workitem.id.x"()

declare i64 @"llvm.amdgcn.ballot.i64"(i1 %".1")

declare i32 @"llvm.amdgcn.mbcnt.lo"(i32 %".1", i32 %".2")

declare i32 @"llvm.amdgcn.mbcnt.hi"(i32 %".1", i32 %".2")

declare i32 @"llvm.amdgcn.ds.bpermute"(i32 %".1", i32 %".2")

!llvm.module.flags = !{ !0 }
!0 = !{ i32 1, !"amdhsa_code_object_version", i32 400 }
