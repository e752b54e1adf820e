module @layer_norm {
  func.func @main(%arg0: tensor<4x16xf32>, %arg1: tensor<16xf32>, %arg2: tensor<16xf32>, %arg3: tensor<f32>, %arg4: tensor<f32>, %arg5: tensor<f32>, %arg6: tensor<4x16xf32>, %arg7: tensor<f32>, %arg8: tensor<f32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) {
    %0 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.reduce"(%arg0, %0) ({
      ^bb0(%2: tensor<f32>, %3: tensor<f32>):
      %4 = "stablehlo.add"(%2, %3) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%4) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x16xf32>, tensor<f32>) -> tensor<4xf32>
    %5 = "stablehlo.reshape"(%1) : (tensor<4xf32>) -> tensor<4x1xf32>
    %6 = "stablehlo.constant"() {value = dense<1.6e+01> : tensor<f32>} : () -> tensor<f32>
    %7 = "stablehlo.broadcast_in_dim"(%6) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x1xf32>
    %8 = "stablehlo.divide"(%5, %7) : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
    %9 = "stablehlo.broadcast_in_dim"(%8) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x16xf32>
    %10 = "stablehlo.subtract"(%arg0, %9) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %11 = "stablehlo.multiply"(%10, %10) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %12 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %13 = "stablehlo.reduce"(%11, %12) ({
      ^bb0(%14: tensor<f32>, %15: tensor<f32>):
      %16 = "stablehlo.add"(%14, %15) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%16) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x16xf32>, tensor<f32>) -> tensor<4xf32>
    %17 = "stablehlo.reshape"(%13) : (tensor<4xf32>) -> tensor<4x1xf32>
    %18 = "stablehlo.broadcast_in_dim"(%6) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x1xf32>
    %19 = "stablehlo.divide"(%17, %18) : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
    %20 = "stablehlo.constant"() {value = dense<1.0e-05> : tensor<f32>} : () -> tensor<f32>
    %21 = "stablehlo.broadcast_in_dim"(%20) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x1xf32>
    %22 = "stablehlo.add"(%19, %21) : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
    %23 = "stablehlo.rsqrt"(%22) : (tensor<4x1xf32>) -> tensor<4x1xf32>
    %24 = "stablehlo.broadcast_in_dim"(%23) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x16xf32>
    %25 = "stablehlo.multiply"(%10, %24) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %26 = "stablehlo.broadcast_in_dim"(%arg1) {broadcast_dimensions = array<i64: 1>} : (tensor<16xf32>) -> tensor<4x16xf32>
    %27 = "stablehlo.multiply"(%25, %26) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %28 = "stablehlo.broadcast_in_dim"(%arg2) {broadcast_dimensions = array<i64: 1>} : (tensor<16xf32>) -> tensor<4x16xf32>
    %29 = "stablehlo.add"(%27, %28) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %30 = "stablehlo.broadcast_in_dim"(%arg3) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x1xf32>
    %31 = "stablehlo.divide"(%5, %30) : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
    %32 = "stablehlo.broadcast_in_dim"(%31) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x16xf32>
    %33 = "stablehlo.subtract"(%arg0, %32) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %34 = "stablehlo.multiply"(%33, %33) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %35 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %36 = "stablehlo.reduce"(%34, %35) ({
      ^bb0(%37: tensor<f32>, %38: tensor<f32>):
      %39 = "stablehlo.add"(%37, %38) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%39) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x16xf32>, tensor<f32>) -> tensor<4xf32>
    %40 = "stablehlo.reshape"(%36) : (tensor<4xf32>) -> tensor<4x1xf32>
    %41 = "stablehlo.broadcast_in_dim"(%arg4) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x1xf32>
    %42 = "stablehlo.divide"(%40, %41) : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
    %43 = "stablehlo.broadcast_in_dim"(%arg5) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x1xf32>
    %44 = "stablehlo.add"(%42, %43) : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
    %45 = "stablehlo.rsqrt"(%44) : (tensor<4x1xf32>) -> tensor<4x1xf32>
    %46 = "stablehlo.broadcast_in_dim"(%45) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x16xf32>
    %47 = "stablehlo.multiply"(%33, %46) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %48 = "stablehlo.multiply"(%arg6, %47) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %49 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %50 = "stablehlo.reduce"(%48, %49) ({
      ^bb0(%51: tensor<f32>, %52: tensor<f32>):
      %53 = "stablehlo.add"(%51, %52) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%53) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4x16xf32>, tensor<f32>) -> tensor<16xf32>
    %54 = "stablehlo.broadcast_in_dim"(%arg1) {broadcast_dimensions = array<i64: 1>} : (tensor<16xf32>) -> tensor<4x16xf32>
    %55 = "stablehlo.multiply"(%arg6, %54) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %56 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %57 = "stablehlo.reduce"(%arg6, %56) ({
      ^bb0(%58: tensor<f32>, %59: tensor<f32>):
      %60 = "stablehlo.add"(%58, %59) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%60) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4x16xf32>, tensor<f32>) -> tensor<16xf32>
    %61 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %62 = "stablehlo.reduce"(%55, %61) ({
      ^bb0(%63: tensor<f32>, %64: tensor<f32>):
      %65 = "stablehlo.add"(%63, %64) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%65) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x16xf32>, tensor<f32>) -> tensor<4xf32>
    %66 = "stablehlo.reshape"(%62) : (tensor<4xf32>) -> tensor<4x1xf32>
    %67 = "stablehlo.broadcast_in_dim"(%arg7) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x1xf32>
    %68 = "stablehlo.divide"(%66, %67) : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
    %69 = "stablehlo.multiply"(%55, %47) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %70 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %71 = "stablehlo.reduce"(%69, %70) ({
      ^bb0(%72: tensor<f32>, %73: tensor<f32>):
      %74 = "stablehlo.add"(%72, %73) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%74) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x16xf32>, tensor<f32>) -> tensor<4xf32>
    %75 = "stablehlo.reshape"(%71) : (tensor<4xf32>) -> tensor<4x1xf32>
    %76 = "stablehlo.broadcast_in_dim"(%arg8) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x1xf32>
    %77 = "stablehlo.divide"(%75, %76) : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
    %78 = "stablehlo.broadcast_in_dim"(%68) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x16xf32>
    %79 = "stablehlo.subtract"(%55, %78) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %80 = "stablehlo.broadcast_in_dim"(%77) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x16xf32>
    %81 = "stablehlo.multiply"(%47, %80) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %82 = "stablehlo.subtract"(%79, %81) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %83 = "stablehlo.broadcast_in_dim"(%45) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x16xf32>
    %84 = "stablehlo.multiply"(%83, %82) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    "func.return"(%29, %84, %50, %57) : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
  }
}
