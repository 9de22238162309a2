import numpy as np
import numpy.typing as npt

def process(
    image: npt.NDArray[np.uint8],
    rects: npt.NDArray[np.int64],
    size: int,
    table: npt.NDArray[np.float32],
    resample: str,
    threads: int = 1,
) -> npt.NDArray[np.float32]: ...
def process_compact(
    image: npt.NDArray[np.uint8],
    rects: npt.NDArray[np.int64],
    size: int,
    resample: str,
    threads: int = 1,
) -> npt.NDArray[np.uint8]: ...
