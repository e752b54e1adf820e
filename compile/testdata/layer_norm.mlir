module @layer_norm {
  func.func @main(%arg0: tensor<4x16xf32>, %arg1: tensor<16xf32>, %arg2: tensor<16xf32>, %arg3: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) {
    %0 = "stablehlo.constant"() {value = dense<1.6e+01> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.constant"() {value = dense<1.0e-05> : tensor<f32>} : () -> tensor<f32>
    %2 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %3 = "stablehlo.reduce"(%arg0, %2) ({
      ^bb0(%4: tensor<f32>, %5: tensor<f32>):
      %6 = "stablehlo.add"(%4, %5) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%6) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x16xf32>, tensor<f32>) -> tensor<4xf32>
    %7 = "stablehlo.reshape"(%3) : (tensor<4xf32>) -> tensor<4x1xf32>
    %8 = "stablehlo.constant"() {value = dense<1.6e+01> : tensor<f32>} : () -> tensor<f32>
    %9 = "stablehlo.broadcast_in_dim"(%8) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x1xf32>
    %10 = "stablehlo.divide"(%7, %9) : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
    %11 = "stablehlo.broadcast_in_dim"(%10) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x16xf32>
    %12 = "stablehlo.subtract"(%arg0, %11) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %13 = "stablehlo.multiply"(%12, %12) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %14 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %15 = "stablehlo.reduce"(%13, %14) ({
      ^bb0(%16: tensor<f32>, %17: tensor<f32>):
      %18 = "stablehlo.add"(%16, %17) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%18) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x16xf32>, tensor<f32>) -> tensor<4xf32>
    %19 = "stablehlo.reshape"(%15) : (tensor<4xf32>) -> tensor<4x1xf32>
    %20 = "stablehlo.broadcast_in_dim"(%8) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x1xf32>
    %21 = "stablehlo.divide"(%19, %20) : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
    %22 = "stablehlo.constant"() {value = dense<1.0e-05> : tensor<f32>} : () -> tensor<f32>
    %23 = "stablehlo.broadcast_in_dim"(%22) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x1xf32>
    %24 = "stablehlo.add"(%21, %23) : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
    %25 = "stablehlo.rsqrt"(%24) : (tensor<4x1xf32>) -> tensor<4x1xf32>
    %26 = "stablehlo.broadcast_in_dim"(%25) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x16xf32>
    %27 = "stablehlo.multiply"(%12, %26) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %28 = "stablehlo.broadcast_in_dim"(%arg1) {broadcast_dimensions = array<i64: 1>} : (tensor<16xf32>) -> tensor<4x16xf32>
    %29 = "stablehlo.multiply"(%27, %28) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %30 = "stablehlo.broadcast_in_dim"(%arg2) {broadcast_dimensions = array<i64: 1>} : (tensor<16xf32>) -> tensor<4x16xf32>
    %31 = "stablehlo.add"(%29, %30) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %32 = "stablehlo.broadcast_in_dim"(%0) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x1xf32>
    %33 = "stablehlo.divide"(%7, %32) : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
    %34 = "stablehlo.broadcast_in_dim"(%33) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x16xf32>
    %35 = "stablehlo.subtract"(%arg0, %34) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %36 = "stablehlo.multiply"(%35, %35) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %37 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %38 = "stablehlo.reduce"(%36, %37) ({
      ^bb0(%39: tensor<f32>, %40: tensor<f32>):
      %41 = "stablehlo.add"(%39, %40) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%41) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x16xf32>, tensor<f32>) -> tensor<4xf32>
    %42 = "stablehlo.reshape"(%38) : (tensor<4xf32>) -> tensor<4x1xf32>
    %43 = "stablehlo.broadcast_in_dim"(%0) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x1xf32>
    %44 = "stablehlo.divide"(%42, %43) : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
    %45 = "stablehlo.broadcast_in_dim"(%1) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x1xf32>
    %46 = "stablehlo.add"(%44, %45) : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
    %47 = "stablehlo.rsqrt"(%46) : (tensor<4x1xf32>) -> tensor<4x1xf32>
    %48 = "stablehlo.broadcast_in_dim"(%47) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x16xf32>
    %49 = "stablehlo.multiply"(%35, %48) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %50 = "stablehlo.multiply"(%arg3, %49) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %51 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %52 = "stablehlo.reduce"(%50, %51) ({
      ^bb0(%53: tensor<f32>, %54: tensor<f32>):
      %55 = "stablehlo.add"(%53, %54) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%55) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4x16xf32>, tensor<f32>) -> tensor<16xf32>
    %56 = "stablehlo.broadcast_in_dim"(%arg1) {broadcast_dimensions = array<i64: 1>} : (tensor<16xf32>) -> tensor<4x16xf32>
    %57 = "stablehlo.multiply"(%arg3, %56) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %58 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %59 = "stablehlo.reduce"(%arg3, %58) ({
      ^bb0(%60: tensor<f32>, %61: tensor<f32>):
      %62 = "stablehlo.add"(%60, %61) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%62) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4x16xf32>, tensor<f32>) -> tensor<16xf32>
    %63 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %64 = "stablehlo.reduce"(%57, %63) ({
      ^bb0(%65: tensor<f32>, %66: tensor<f32>):
      %67 = "stablehlo.add"(%65, %66) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%67) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x16xf32>, tensor<f32>) -> tensor<4xf32>
    %68 = "stablehlo.reshape"(%64) : (tensor<4xf32>) -> tensor<4x1xf32>
    %69 = "stablehlo.broadcast_in_dim"(%0) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x1xf32>
    %70 = "stablehlo.divide"(%68, %69) : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
    %71 = "stablehlo.multiply"(%57, %49) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %72 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %73 = "stablehlo.reduce"(%71, %72) ({
      ^bb0(%74: tensor<f32>, %75: tensor<f32>):
      %76 = "stablehlo.add"(%74, %75) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%76) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x16xf32>, tensor<f32>) -> tensor<4xf32>
    %77 = "stablehlo.reshape"(%73) : (tensor<4xf32>) -> tensor<4x1xf32>
    %78 = "stablehlo.broadcast_in_dim"(%0) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x1xf32>
    %79 = "stablehlo.divide"(%77, %78) : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
    %80 = "stablehlo.broadcast_in_dim"(%70) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x16xf32>
    %81 = "stablehlo.subtract"(%57, %80) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %82 = "stablehlo.broadcast_in_dim"(%79) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x16xf32>
    %83 = "stablehlo.multiply"(%49, %82) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %84 = "stablehlo.subtract"(%81, %83) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %85 = "stablehlo.broadcast_in_dim"(%47) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x16xf32>
    %86 = "stablehlo.multiply"(%85, %84) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    "func.return"(%31, %86, %52, %59) : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
  }
}
