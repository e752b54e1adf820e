module @layer_norm {
  func.func @main(%arg0: tensor<2x5xf32>, %arg1: tensor<5xf32>, %arg2: tensor<5xf32>) -> (tensor<2x5xf32>) {
    %0 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.reduce"(%arg0, %0) ({
      ^bb0(%2: tensor<f32>, %3: tensor<f32>):
      %4 = "stablehlo.add"(%2, %3) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%4) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x5xf32>, tensor<f32>) -> tensor<2xf32>
    %5 = "stablehlo.reshape"(%1) : (tensor<2xf32>) -> tensor<2x1xf32>
    %6 = "stablehlo.constant"() {value = dense<5.0e+00> : tensor<f32>} : () -> tensor<f32>
    %7 = "stablehlo.broadcast_in_dim"(%6) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x1xf32>
    %8 = "stablehlo.divide"(%5, %7) : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    %9 = "stablehlo.broadcast_in_dim"(%8) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<2x1xf32>) -> tensor<2x5xf32>
    %10 = "stablehlo.subtract"(%arg0, %9) : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
    %11 = "stablehlo.multiply"(%10, %10) : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
    %12 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %13 = "stablehlo.reduce"(%11, %12) ({
      ^bb0(%14: tensor<f32>, %15: tensor<f32>):
      %16 = "stablehlo.add"(%14, %15) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%16) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x5xf32>, tensor<f32>) -> tensor<2xf32>
    %17 = "stablehlo.reshape"(%13) : (tensor<2xf32>) -> tensor<2x1xf32>
    %18 = "stablehlo.constant"() {value = dense<5.0e+00> : tensor<f32>} : () -> tensor<f32>
    %19 = "stablehlo.broadcast_in_dim"(%18) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x1xf32>
    %20 = "stablehlo.divide"(%17, %19) : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    %21 = "stablehlo.constant"() {value = dense<1.0e-05> : tensor<f32>} : () -> tensor<f32>
    %22 = "stablehlo.broadcast_in_dim"(%21) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x1xf32>
    %23 = "stablehlo.add"(%20, %22) : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    %24 = "stablehlo.rsqrt"(%23) : (tensor<2x1xf32>) -> tensor<2x1xf32>
    %25 = "stablehlo.broadcast_in_dim"(%24) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<2x1xf32>) -> tensor<2x5xf32>
    %26 = "stablehlo.multiply"(%10, %25) : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
    %27 = "stablehlo.broadcast_in_dim"(%arg1) {broadcast_dimensions = array<i64: 1>} : (tensor<5xf32>) -> tensor<2x5xf32>
    %28 = "stablehlo.multiply"(%26, %27) : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
    %29 = "stablehlo.broadcast_in_dim"(%arg2) {broadcast_dimensions = array<i64: 1>} : (tensor<5xf32>) -> tensor<2x5xf32>
    %30 = "stablehlo.add"(%28, %29) : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
    "func.return"(%30) : (tensor<2x5xf32>) -> ()
  }
}
