module @attention {
  func.func @main(%arg0: tensor<2x5x8xf32>, %arg1: tensor<24x8xf32>, %arg2: tensor<24xf32>, %arg3: tensor<8x8xf32>, %arg4: tensor<8xf32>) -> (tensor<2x5x8xf32>) {
    %0 = "stablehlo.dot_general"(%arg0, %arg1) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>} : (tensor<2x5x8xf32>, tensor<24x8xf32>) -> tensor<2x5x24xf32>
    %1 = "stablehlo.broadcast_in_dim"(%arg2) {broadcast_dimensions = array<i64: 2>} : (tensor<24xf32>) -> tensor<2x5x24xf32>
    %2 = "stablehlo.add"(%0, %1) : (tensor<2x5x24xf32>, tensor<2x5x24xf32>) -> tensor<2x5x24xf32>
    %3 = "stablehlo.reshape"(%2) : (tensor<2x5x24xf32>) -> tensor<2x5x3x2x4xf32>
    %4 = "stablehlo.transpose"(%3) {permutation = array<i64: 2, 0, 3, 1, 4>} : (tensor<2x5x3x2x4xf32>) -> tensor<3x2x2x5x4xf32>
    %5 = "stablehlo.slice"(%4) {start_indices = array<i64: 0, 0, 0, 0, 0>, limit_indices = array<i64: 1, 2, 2, 5, 4>, strides = array<i64: 1, 1, 1, 1, 1>} : (tensor<3x2x2x5x4xf32>) -> tensor<1x2x2x5x4xf32>
    %6 = "stablehlo.reshape"(%5) : (tensor<1x2x2x5x4xf32>) -> tensor<2x2x5x4xf32>
    %7 = "stablehlo.slice"(%4) {start_indices = array<i64: 1, 0, 0, 0, 0>, limit_indices = array<i64: 2, 2, 2, 5, 4>, strides = array<i64: 1, 1, 1, 1, 1>} : (tensor<3x2x2x5x4xf32>) -> tensor<1x2x2x5x4xf32>
    %8 = "stablehlo.reshape"(%7) : (tensor<1x2x2x5x4xf32>) -> tensor<2x2x5x4xf32>
    %9 = "stablehlo.slice"(%4) {start_indices = array<i64: 2, 0, 0, 0, 0>, limit_indices = array<i64: 3, 2, 2, 5, 4>, strides = array<i64: 1, 1, 1, 1, 1>} : (tensor<3x2x2x5x4xf32>) -> tensor<1x2x2x5x4xf32>
    %10 = "stablehlo.reshape"(%9) : (tensor<1x2x2x5x4xf32>) -> tensor<2x2x5x4xf32>
    %11 = "stablehlo.transpose"(%8) {permutation = array<i64: 0, 1, 3, 2>} : (tensor<2x2x5x4xf32>) -> tensor<2x2x4x5xf32>
    %12 = "stablehlo.dot_general"(%6, %11) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0, 1], rhs_batching_dimensions = [0, 1], lhs_contracting_dimensions = [3], rhs_contracting_dimensions = [2]>} : (tensor<2x2x5x4xf32>, tensor<2x2x4x5xf32>) -> tensor<2x2x5x5xf32>
    %13 = "stablehlo.constant"() {value = dense<5.0e-01> : tensor<f32>} : () -> tensor<f32>
    %14 = "stablehlo.broadcast_in_dim"(%13) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x2x5x5xf32>
    %15 = "stablehlo.multiply"(%12, %14) : (tensor<2x2x5x5xf32>, tensor<2x2x5x5xf32>) -> tensor<2x2x5x5xf32>
    %16 = "stablehlo.constant"() {value = dense<true> : tensor<5x5xi1>} : () -> tensor<5x5xi1>
    %17 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<5x5xi64>
    %18 = "stablehlo.iota"() {iota_dimension = 1 : i64} : () -> tensor<5x5xi64>
    %19 = "stablehlo.subtract"(%18, %17) : (tensor<5x5xi64>, tensor<5x5xi64>) -> tensor<5x5xi64>
    %20 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %21 = "stablehlo.broadcast_in_dim"(%20) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<5x5xi64>
    %22 = "stablehlo.compare"(%19, %21) {comparison_direction = #stablehlo<comparison_direction LE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<5x5xi64>, tensor<5x5xi64>) -> tensor<5x5xi1>
    %23 = "stablehlo.constant"() {value = dense<false> : tensor<i1>} : () -> tensor<i1>
    %24 = "stablehlo.broadcast_in_dim"(%23) {broadcast_dimensions = array<i64>} : (tensor<i1>) -> tensor<5x5xi1>
    %25 = "stablehlo.select"(%22, %16, %24) : (tensor<5x5xi1>, tensor<5x5xi1>, tensor<5x5xi1>) -> tensor<5x5xi1>
    %26 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %27 = "stablehlo.broadcast_in_dim"(%25) {broadcast_dimensions = array<i64: 2, 3>} : (tensor<5x5xi1>) -> tensor<2x2x5x5xi1>
    %28 = "stablehlo.broadcast_in_dim"(%26) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x2x5x5xf32>
    %29 = "stablehlo.select"(%27, %15, %28) : (tensor<2x2x5x5xi1>, tensor<2x2x5x5xf32>, tensor<2x2x5x5xf32>) -> tensor<2x2x5x5xf32>
    %30 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %31 = "stablehlo.reduce"(%29, %30) ({
      ^bb0(%32: tensor<f32>, %33: tensor<f32>):
      %34 = "stablehlo.maximum"(%32, %33) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%34) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 3>} : (tensor<2x2x5x5xf32>, tensor<f32>) -> tensor<2x2x5xf32>
    %35 = "stablehlo.reshape"(%31) : (tensor<2x2x5xf32>) -> tensor<2x2x5x1xf32>
    %36 = "stablehlo.broadcast_in_dim"(%35) {broadcast_dimensions = array<i64: 0, 1, 2, 3>} : (tensor<2x2x5x1xf32>) -> tensor<2x2x5x5xf32>
    %37 = "stablehlo.subtract"(%29, %36) : (tensor<2x2x5x5xf32>, tensor<2x2x5x5xf32>) -> tensor<2x2x5x5xf32>
    %38 = "stablehlo.exponential"(%37) : (tensor<2x2x5x5xf32>) -> tensor<2x2x5x5xf32>
    %39 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %40 = "stablehlo.reduce"(%38, %39) ({
      ^bb0(%41: tensor<f32>, %42: tensor<f32>):
      %43 = "stablehlo.add"(%41, %42) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%43) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 3>} : (tensor<2x2x5x5xf32>, tensor<f32>) -> tensor<2x2x5xf32>
    %44 = "stablehlo.reshape"(%40) : (tensor<2x2x5xf32>) -> tensor<2x2x5x1xf32>
    %45 = "stablehlo.exponential"(%37) : (tensor<2x2x5x5xf32>) -> tensor<2x2x5x5xf32>
    %46 = "stablehlo.broadcast_in_dim"(%44) {broadcast_dimensions = array<i64: 0, 1, 2, 3>} : (tensor<2x2x5x1xf32>) -> tensor<2x2x5x5xf32>
    %47 = "stablehlo.divide"(%45, %46) : (tensor<2x2x5x5xf32>, tensor<2x2x5x5xf32>) -> tensor<2x2x5x5xf32>
    %48 = "stablehlo.dot_general"(%47, %10) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0, 1], rhs_batching_dimensions = [0, 1], lhs_contracting_dimensions = [3], rhs_contracting_dimensions = [2]>} : (tensor<2x2x5x5xf32>, tensor<2x2x5x4xf32>) -> tensor<2x2x5x4xf32>
    %49 = "stablehlo.transpose"(%48) {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x2x5x4xf32>) -> tensor<2x5x2x4xf32>
    %50 = "stablehlo.reshape"(%49) : (tensor<2x5x2x4xf32>) -> tensor<2x5x8xf32>
    %51 = "stablehlo.dot_general"(%50, %arg3) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>} : (tensor<2x5x8xf32>, tensor<8x8xf32>) -> tensor<2x5x8xf32>
    %52 = "stablehlo.broadcast_in_dim"(%arg4) {broadcast_dimensions = array<i64: 2>} : (tensor<8xf32>) -> tensor<2x5x8xf32>
    %53 = "stablehlo.add"(%51, %52) : (tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
    "func.return"(%53) : (tensor<2x5x8xf32>) -> ()
  }
}
