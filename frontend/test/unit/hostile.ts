export const HOSTILE = "void k<float, &foo>(T* <script>alert(1)</script>)";
