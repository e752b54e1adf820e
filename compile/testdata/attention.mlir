module @attention {
  func.func @main(%arg0: tensor<2x6x16xf32>, %arg1: tensor<16x16xf32>, %arg2: tensor<16xf32>, %arg3: tensor<16x16xf32>, %arg4: tensor<16xf32>, %arg5: tensor<16x16xf32>, %arg6: tensor<16xf32>, %arg7: tensor<16x16xf32>, %arg8: tensor<16xf32>) -> (tensor<2x6x16xf32>) {
    %0 = "stablehlo.constant"() {value = dense<3.5355338e-01> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %2 = "stablehlo.dot_general"(%arg0, %arg1) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>} : (tensor<2x6x16xf32>, tensor<16x16xf32>) -> tensor<2x6x16xf32>
    %3 = "stablehlo.broadcast_in_dim"(%arg2) {broadcast_dimensions = array<i64: 2>} : (tensor<16xf32>) -> tensor<2x6x16xf32>
    %4 = "stablehlo.add"(%2, %3) : (tensor<2x6x16xf32>, tensor<2x6x16xf32>) -> tensor<2x6x16xf32>
    %5 = "stablehlo.dot_general"(%arg0, %arg3) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>} : (tensor<2x6x16xf32>, tensor<16x16xf32>) -> tensor<2x6x16xf32>
    %6 = "stablehlo.broadcast_in_dim"(%arg4) {broadcast_dimensions = array<i64: 2>} : (tensor<16xf32>) -> tensor<2x6x16xf32>
    %7 = "stablehlo.add"(%5, %6) : (tensor<2x6x16xf32>, tensor<2x6x16xf32>) -> tensor<2x6x16xf32>
    %8 = "stablehlo.dot_general"(%arg0, %arg5) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>} : (tensor<2x6x16xf32>, tensor<16x16xf32>) -> tensor<2x6x16xf32>
    %9 = "stablehlo.broadcast_in_dim"(%arg6) {broadcast_dimensions = array<i64: 2>} : (tensor<16xf32>) -> tensor<2x6x16xf32>
    %10 = "stablehlo.add"(%8, %9) : (tensor<2x6x16xf32>, tensor<2x6x16xf32>) -> tensor<2x6x16xf32>
    %11 = "stablehlo.reshape"(%4) : (tensor<2x6x16xf32>) -> tensor<2x6x2x8xf32>
    %12 = "stablehlo.transpose"(%11) {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x6x2x8xf32>) -> tensor<2x2x6x8xf32>
    %13 = "stablehlo.reshape"(%7) : (tensor<2x6x16xf32>) -> tensor<2x6x2x8xf32>
    %14 = "stablehlo.transpose"(%13) {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x6x2x8xf32>) -> tensor<2x2x6x8xf32>
    %15 = "stablehlo.transpose"(%14) {permutation = array<i64: 0, 1, 3, 2>} : (tensor<2x2x6x8xf32>) -> tensor<2x2x8x6xf32>
    %16 = "stablehlo.dot_general"(%12, %15) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0, 1], rhs_batching_dimensions = [0, 1], lhs_contracting_dimensions = [3], rhs_contracting_dimensions = [2]>} : (tensor<2x2x6x8xf32>, tensor<2x2x8x6xf32>) -> tensor<2x2x6x6xf32>
    %17 = "stablehlo.broadcast_in_dim"(%0) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x2x6x6xf32>
    %18 = "stablehlo.multiply"(%16, %17) : (tensor<2x2x6x6xf32>, tensor<2x2x6x6xf32>) -> tensor<2x2x6x6xf32>
    %19 = "stablehlo.constant"() {value = dense<true> : tensor<6x6xi1>} : () -> tensor<6x6xi1>
    %20 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<6x6xi64>
    %21 = "stablehlo.iota"() {iota_dimension = 1 : i64} : () -> tensor<6x6xi64>
    %22 = "stablehlo.subtract"(%21, %20) : (tensor<6x6xi64>, tensor<6x6xi64>) -> tensor<6x6xi64>
    %23 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %24 = "stablehlo.broadcast_in_dim"(%23) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<6x6xi64>
    %25 = "stablehlo.compare"(%22, %24) {comparison_direction = #stablehlo<comparison_direction LE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<6x6xi64>, tensor<6x6xi64>) -> tensor<6x6xi1>
    %26 = "stablehlo.constant"() {value = dense<false> : tensor<i1>} : () -> tensor<i1>
    %27 = "stablehlo.broadcast_in_dim"(%26) {broadcast_dimensions = array<i64>} : (tensor<i1>) -> tensor<6x6xi1>
    %28 = "stablehlo.select"(%25, %19, %27) : (tensor<6x6xi1>, tensor<6x6xi1>, tensor<6x6xi1>) -> tensor<6x6xi1>
    %29 = "stablehlo.broadcast_in_dim"(%28) {broadcast_dimensions = array<i64: 2, 3>} : (tensor<6x6xi1>) -> tensor<2x2x6x6xi1>
    %30 = "stablehlo.broadcast_in_dim"(%1) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x2x6x6xf32>
    %31 = "stablehlo.select"(%29, %18, %30) : (tensor<2x2x6x6xi1>, tensor<2x2x6x6xf32>, tensor<2x2x6x6xf32>) -> tensor<2x2x6x6xf32>
    %32 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %33 = "stablehlo.reduce"(%31, %32) ({
      ^bb0(%34: tensor<f32>, %35: tensor<f32>):
      %36 = "stablehlo.maximum"(%34, %35) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%36) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 3>} : (tensor<2x2x6x6xf32>, tensor<f32>) -> tensor<2x2x6xf32>
    %37 = "stablehlo.reshape"(%33) : (tensor<2x2x6xf32>) -> tensor<2x2x6x1xf32>
    %38 = "stablehlo.broadcast_in_dim"(%37) {broadcast_dimensions = array<i64: 0, 1, 2, 3>} : (tensor<2x2x6x1xf32>) -> tensor<2x2x6x6xf32>
    %39 = "stablehlo.subtract"(%31, %38) : (tensor<2x2x6x6xf32>, tensor<2x2x6x6xf32>) -> tensor<2x2x6x6xf32>
    %40 = "stablehlo.exponential"(%39) : (tensor<2x2x6x6xf32>) -> tensor<2x2x6x6xf32>
    %41 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %42 = "stablehlo.reduce"(%40, %41) ({
      ^bb0(%43: tensor<f32>, %44: tensor<f32>):
      %45 = "stablehlo.add"(%43, %44) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%45) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 3>} : (tensor<2x2x6x6xf32>, tensor<f32>) -> tensor<2x2x6xf32>
    %46 = "stablehlo.reshape"(%42) : (tensor<2x2x6xf32>) -> tensor<2x2x6x1xf32>
    %47 = "stablehlo.broadcast_in_dim"(%46) {broadcast_dimensions = array<i64: 0, 1, 2, 3>} : (tensor<2x2x6x1xf32>) -> tensor<2x2x6x6xf32>
    %48 = "stablehlo.divide"(%40, %47) : (tensor<2x2x6x6xf32>, tensor<2x2x6x6xf32>) -> tensor<2x2x6x6xf32>
    %49 = "stablehlo.reshape"(%10) : (tensor<2x6x16xf32>) -> tensor<2x6x2x8xf32>
    %50 = "stablehlo.transpose"(%49) {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x6x2x8xf32>) -> tensor<2x2x6x8xf32>
    %51 = "stablehlo.dot_general"(%48, %50) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0, 1], rhs_batching_dimensions = [0, 1], lhs_contracting_dimensions = [3], rhs_contracting_dimensions = [2]>} : (tensor<2x2x6x6xf32>, tensor<2x2x6x8xf32>) -> tensor<2x2x6x8xf32>
    %52 = "stablehlo.transpose"(%51) {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x2x6x8xf32>) -> tensor<2x6x2x8xf32>
    %53 = "stablehlo.reshape"(%52) : (tensor<2x6x2x8xf32>) -> tensor<2x6x16xf32>
    %54 = "stablehlo.dot_general"(%53, %arg7) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>} : (tensor<2x6x16xf32>, tensor<16x16xf32>) -> tensor<2x6x16xf32>
    %55 = "stablehlo.broadcast_in_dim"(%arg8) {broadcast_dimensions = array<i64: 2>} : (tensor<16xf32>) -> tensor<2x6x16xf32>
    %56 = "stablehlo.add"(%54, %55) : (tensor<2x6x16xf32>, tensor<2x6x16xf32>) -> tensor<2x6x16xf32>
    %57 = "stablehlo.add"(%56, %arg0) : (tensor<2x6x16xf32>, tensor<2x6x16xf32>) -> tensor<2x6x16xf32>
    "func.return"(%57) : (tensor<2x6x16xf32>) -> ()
  }
}
